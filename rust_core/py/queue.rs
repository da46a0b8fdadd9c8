//! `ClickQueue` and `Clicks` of `slugline._core`: the redirect's one call per click, and the batches the
//! flusher takes out, encodes with the GIL released, and releases or gives back.

use super::{core_error, guard, lock, non_negative, released};
use crate::rollup::queue::{self, ClickArgs, ClickQueue, Cuts, RawClick, Recorded};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
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
    #[pyo3(signature = (link_id, user_agent, referrer, utm_source, via_qr, ip, timestamp = None))]
    fn record(
        &self,
        link_id: &str,
        user_agent: &[u8],
        referrer: &[u8],
        utm_source: Option<&str>,
        via_qr: bool,
        ip: &str,
        timestamp: Option<f64>,
    ) -> PyResult<u8> {
        let args = ClickArgs {
            link_id,
            user_agent,
            referrer,
            utm_source,
            via_qr,
            ip,
            timestamp: timestamp.unwrap_or_else(queue::now),
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

    /// `(totals, clicks, rollup, rows)`: three JSON arrays for one database write (see `Encoded`), and the
    /// number of clicks. Classification, hashing and roll-up run with the GIL released.
    fn encode(&self, py: Python<'_>, salts: HashMap<i64, Vec<u8>>) -> PyResult<(String, String, String, usize)> {
        let encoded = released(py, || queue::encode(&lock(&self.inner), &salts))?.map_err(core_error)?;
        Ok((encoded.totals, encoded.clicks, encoded.rollup, encoded.rows))
    }

    /// One `Clicks` per click, in order; this one is empty afterwards.
    fn split(&self) -> PyResult<Vec<PyClicks>> {
        guard(|| {
            let all = std::mem::take(&mut *lock(&self.inner));
            Ok(all.into_iter().map(|c| PyClicks::new(vec![c])).collect())
        })
    }

    fn raw<'py>(&self, py: Python<'py>) -> PyResult<Vec<RawTuple<'py>>> {
        guard(|| Ok(lock(&self.inner).iter().map(|c| raw_tuple(py, c)).collect()))
    }
}
