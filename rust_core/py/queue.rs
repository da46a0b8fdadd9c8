//! `ClickQueue` and `Clicks` of `slugline._core`: the redirect's one call per click, and the batches the
//! flusher takes out, encodes with the GIL released, and releases or gives back.

use super::geo_rules::PyGeoDb;
use super::{core_error, guard, lock, non_negative, released};
use crate::clickqueue::{self as queue, ClickArgs, ClickQueue, Cuts, Encoded, RawClick, Recorded};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

#[pyclass(name = "ClickQueue", module = "slugline._core", frozen)]
pub struct PyClickQueue {
    inner: Mutex<ClickQueue>,
}

/// Clicks taken out of a queue: written and released, or given back.
#[pyclass(name = "Clicks", module = "slugline._core", frozen)]
pub struct PyClicks {
    inner: Mutex<Vec<RawClick>>,
}

impl PyClicks {
    fn new(clicks: Vec<RawClick>) -> Self {
        PyClicks {
            inner: Mutex::new(clicks),
        }
    }
}

#[pymethods]
impl PyClickQueue {
    #[new]
    #[pyo3(signature = (*, budget, batch, max_user_agent, max_referrer, max_source))]
    fn new(budget: i64, batch: i64, max_user_agent: i64, max_referrer: i64, max_source: i64) -> PyResult<Self> {
        let cuts = Cuts {
            user_agent: non_negative(max_user_agent, "max_user_agent")?,
            referrer: non_negative(max_referrer, "max_referrer")?,
            source: non_negative(max_source, "max_source")?,
        };
        let (budget, batch) = (non_negative(budget, "budget")?, non_negative(batch, "batch")?);
        Ok(PyClickQueue {
            inner: Mutex::new(ClickQueue::new(budget, batch, cuts)),
        })
    }

    /// Keeps one click (stamped now unless `timestamp` is given). Returns 0 when kept, 1 when kept and a full
    /// batch now waits, 2 when the budget is spent (the click is counted in `dropped`, not kept).
    /// Holds the GIL for well under a microsecond.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (link_id, user_agent, referrer, utm_source, via_qr, ip, timestamp = None, country = None, variant = None))]
    fn record(
        &self,
        link_id: &str,
        user_agent: &[u8],
        referrer: &[u8],
        utm_source: Option<&str>,
        via_qr: bool,
        ip: &str,
        timestamp: Option<f64>,
        country: Option<&str>,
        variant: Option<u8>,
    ) -> PyResult<u8> {
        let args = ClickArgs {
            link_id,
            user_agent,
            referrer,
            utm_source,
            via_qr,
            ip,
            timestamp: timestamp.unwrap_or_else(queue::now),
            country,
            variant,
        };
        guard(|| {
            Ok(match lock(&self.inner).record(&args) {
                Recorded::Kept => 0,
                Recorded::Ready => 1,
                Recorded::Dropped => 2,
            })
        })
    }

    /// Up to `max` of the oldest waiting clicks; their bytes stay counted until released.
    fn take(&self, max: i64) -> PyResult<PyClicks> {
        let max = non_negative(max, "max")?;
        guard(|| Ok(PyClicks::new(lock(&self.inner).take(max))))
    }

    /// Puts clicks that could not be written back at the front; `clicks` is empty afterwards.
    fn give_back(&self, clicks: &PyClicks) -> PyResult<()> {
        guard(|| {
            let taken = std::mem::take(&mut *lock(&clicks.inner));
            lock(&self.inner).give_back(taken);
            Ok(())
        })
    }

    /// Clicks written, or refused for good, leave the budget; `clicks` is empty afterwards.
    fn release(&self, clicks: &PyClicks) -> PyResult<()> {
        guard(|| {
            let done = std::mem::take(&mut *lock(&clicks.inner));
            lock(&self.inner).release(&done);
            Ok(())
        })
    }

    /// Clicks waiting (not those taken).
    fn __len__(&self) -> usize {
        lock(&self.inner).waiting()
    }

    /// Bytes held by every click not yet released: waiting and taken.
    #[getter]
    fn bytes(&self) -> usize {
        lock(&self.inner).bytes()
    }

    #[getter]
    fn budget(&self) -> usize {
        lock(&self.inner).budget()
    }

    /// Clicks refused at the budget since the queue was made.
    #[getter]
    fn dropped(&self) -> u64 {
        lock(&self.inner).dropped()
    }

    /// The waiting clicks as `(link_id, timestamp, user_agent, referrer, utm_source, via_qr, ip)` tuples.
    fn waiting<'py>(&self, py: Python<'py>) -> PyResult<Vec<RawTuple<'py>>> {
        guard(|| Ok(lock(&self.inner).iter().map(|c| raw_tuple(py, c)).collect()))
    }
}

type RawTuple<'py> = (
    String,
    f64,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Option<String>,
    bool,
    String,
);

fn raw_tuple<'py>(py: Python<'py>, click: &RawClick) -> RawTuple<'py> {
    (
        click.link_id().to_owned(),
        click.timestamp(),
        PyBytes::new(py, click.user_agent()),
        PyBytes::new(py, click.referrer()),
        click.utm_source().map(str::to_owned),
        click.via_qr(),
        click.ip().to_owned(),
    )
}

#[pymethods]
impl PyClicks {
    fn __len__(&self) -> usize {
        lock(&self.inner).len()
    }

    /// The distinct epoch days of these clicks, sorted: the days whose salts `encode` needs.
    fn days(&self) -> PyResult<Vec<i64>> {
        guard(|| queue::days(&lock(&self.inner)).map_err(core_error))
    }

    /// Classifies, hashes and rolls up these clicks with the GIL released; sources and referrer hosts are cut
    /// to `max_text` characters.
    #[pyo3(signature = (salts, max_text, geo = None))]
    fn encode(
        &self,
        py: Python<'_>,
        salts: HashMap<i64, Vec<u8>>,
        max_text: i64,
        geo: Option<&Bound<'_, PyGeoDb>>,
    ) -> PyResult<PyEncoded> {
        let max_text = non_negative(max_text, "max_text")?;
        let geo = geo.map(|db| &db.get().inner);
        let encoded =
            released(py, || queue::encode_placed(&lock(&self.inner), &salts, max_text, geo))?.map_err(core_error)?;
        Ok(PyEncoded { inner: encoded })
    }

    /// One `Clicks` per click, in order; this one is empty afterwards.
    fn split(&self) -> PyResult<Vec<PyClicks>> {
        guard(|| {
            let all = std::mem::take(&mut *lock(&self.inner));
            Ok(all.into_iter().map(|c| PyClicks::new(vec![c])).collect())
        })
    }
}

/// A classified batch, ready for one database write.
#[pyclass(name = "EncodedClicks", module = "slugline._core", frozen)]
pub struct PyEncoded {
    pub(super) inner: Encoded,
}

#[pymethods]
impl PyEncoded {
    /// JSON `[[link_id, counted], ...]` for every link of the batch, sorted by id (bots not counted).
    #[getter]
    fn totals(&self) -> &str {
        &self.inner.totals
    }

    /// Distinct links in the batch.
    #[getter]
    fn links(&self) -> usize {
        self.inner.links
    }

    fn __len__(&self) -> usize {
        self.inner.batch.len()
    }

    /// The click rows in PostgreSQL's COPY text format, without links missing from `alive` (when given).
    #[pyo3(signature = (alive = None))]
    fn copy_text<'py>(&self, py: Python<'py>, alive: Option<HashSet<String>>) -> PyResult<Bound<'py, PyBytes>> {
        let text = released(py, || queue::copy_text(&self.inner.batch, alive.as_ref()))?;
        Ok(PyBytes::new(py, text.as_bytes()))
    }

    /// The click rows as flat parameter lists of at most `chunk` rows each (12 values a row: link_id, clicked_at
    /// text, device, browser, os, source, referrer host or None, visitor, then country, region, city and the
    /// variant's index or None),
    /// without links missing from `alive`.
    /// An iterator: each list is built when asked for, so the GIL is held one list at a time, and the caller
    /// (whose database releases it while it works) lets the serving thread in between.
    #[pyo3(signature = (alive = None, chunk = 100))]
    fn values(slf: Py<Self>, alive: Option<HashSet<String>>, chunk: i64) -> PyResult<PyValueChunks> {
        let chunk = non_negative(chunk, "chunk")?.max(1);
        Ok(PyValueChunks {
            encoded: slf,
            alive,
            chunk,
            next: Mutex::new(0),
        })
    }
}

/// `EncodedClicks.values`: the rows as parameter lists, one list built per step.
/// Values of a click row: link, time, device, browser, os, source, referrer host, visitor, country, region, city,
/// variant.
const ROW_VALUES: usize = 12;

#[pyclass(name = "ValueChunks", module = "slugline._core", frozen)]
pub struct PyValueChunks {
    encoded: Py<PyEncoded>,
    alive: Option<HashSet<String>>,
    chunk: usize,
    /// The row the next list starts at.
    next: Mutex<usize>,
}

#[pymethods]
impl PyValueChunks {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Strings that repeat within a list (link ids, classes, sources, hosts) are one Python object each.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        guard(|| {
            let batch = &self.encoded.get().inner.batch;
            let mut next = lock(&self.next);
            let mut shared = Shared::default();
            let mut row: Vec<Bound<'py, PyAny>> = Vec::with_capacity(self.chunk * ROW_VALUES);
            let mut text = String::with_capacity(32);
            let mut seen = 0;
            let rows = batch
                .rows_from(*next)
                .zip(batch.places_from(*next))
                .zip(batch.variants_from(*next));
            for (((link, timestamp, device, browser, os, source, host, visitor), place), variant) in rows {
                seen += 1;
                if self.alive.as_ref().is_some_and(|alive| !alive.contains(link)) {
                    continue;
                }
                row.push(share(py, &mut shared, link));
                text.clear();
                queue::utc_text(timestamp, &mut text);
                row.push(PyString::new(py, &text).into_any());
                for field in [device, browser, os, source] {
                    row.push(share(py, &mut shared, field));
                }
                row.push(match host {
                    Some(host) => share(py, &mut shared, host),
                    None => py.None().into_bound(py),
                });
                row.push(PyString::new(py, visitor).into_any());
                for part in place {
                    row.push(match part {
                        Some(text) => share(py, &mut shared, text),
                        None => py.None().into_bound(py),
                    });
                }
                row.push(match variant {
                    Some(n) => n.into_pyobject(py)?.into_any(),
                    None => py.None().into_bound(py),
                });
                if row.len() == self.chunk * ROW_VALUES {
                    break;
                }
            }
            *next += seen;
            if row.is_empty() {
                return Ok(None);
            }
            Ok(Some(PyList::new(py, row)?))
        })
    }
}

/// One Python string per distinct text of a batch. The texts of a row are the batch's interned strings and
/// `'static` class names, so equal texts are one allocation: they are told apart by address, which is cheaper to
/// hash than their bytes (two equal texts at different addresses would merely get a string each).
fn share<'py>(py: Python<'py>, shared: &mut Shared<'py>, text: &str) -> Bound<'py, PyAny> {
    shared
        .entry((text.as_ptr() as usize, text.len()))
        .or_insert_with(|| PyString::new(py, text).into_any())
        .clone()
}

type Shared<'py> = HashMap<(usize, usize), Bound<'py, PyAny>, BuildHasherDefault<AddressHasher>>;

/// A multiplicative hash for addresses and lengths (not for anything a client chooses).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
