//! `slugline._core.ClickBatch`: a batch of classified clicks and its roll-ups behind a lock, so Python threads
//! may share one instance.

use super::{core_error, guard, lock, released};
use crate::rollup::{ClickBatch, ClickInput};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::collections::HashMap;
use std::sync::Mutex;

#[pyclass(name = "ClickBatch", module = "slugline._core", frozen)]
pub struct PyClickBatch {
    inner: Mutex<ClickBatch>,
}

#[pymethods]
impl PyClickBatch {
    #[new]
    fn new() -> Self {
        PyClickBatch {
            inner: Mutex::new(ClickBatch::new()),
        }
    }

    // Keyword-only, like `SearchIndex.upsert`: one argument per click attribute, none of them safe to swap.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, link_id, timestamp, user_agent, referrer, utm_source, via_qr, visitor_salt, ip))]
    fn add(
        &self,
        link_id: &str,
        timestamp: f64,
        user_agent: &str,
        referrer: Option<&str>,
        utm_source: Option<&str>,
        via_qr: bool,
        visitor_salt: &[u8],
        ip: &str,
    ) -> PyResult<()> {
        let click = ClickInput {
            link_id,
            timestamp,
            user_agent,
            referrer,
            utm_source,
            via_qr,
            visitor_salt,
            ip,
        };
        guard(|| lock(&self.inner).add(&click).map_err(core_error))
    }

    fn __len__(&self) -> usize {
        lock(&self.inner).len()
    }

    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        guard(|| PyList::new(py, lock(&self.inner).rows()))
    }

    fn rollup<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries = released(py, || lock(&self.inner).rollup_entries())?;
        // Ids stay valid after the lock is dropped (the string table only grows); each distinct link id
        // and source becomes one Python string shared by all its rows.
        guard(|| {
            let batch = lock(&self.inner);
            let mut strings: HashMap<u32, Bound<'py, PyString>> = HashMap::new();
            let mut string = |id: u32| {
                strings
                    .entry(id)
                    .or_insert_with(|| PyString::new(py, batch.string(id)))
                    .clone()
            };
            let rows = entries
                .into_iter()
                .map(|e| (string(e.link), e.day, e.device.name(), string(e.source), e.clicks));
            PyList::new(py, rows.collect::<Vec<_>>())
        })
    }

    fn link_totals(&self) -> PyResult<Vec<(String, u64)>> {
        guard(|| {
            Ok(lock(&self.inner)
                .link_totals()
                .into_iter()
                .map(|(id, n)| (id.to_owned(), n))
                .collect())
        })
    }

    #[cfg(feature = "testing")]
    #[staticmethod]
    fn synthetic(py: Python<'_>, n: i64, links: i64, days: i64, seed: i64) -> PyResult<Self> {
        let (n, links, days) = (
            super::non_negative(n, "n")?,
            super::non_negative(links, "links")?,
            super::non_negative(days, "days")?,
        );
        let batch = super::detached(py, || ClickBatch::synthetic(n, links, days, seed as u64))?;
        Ok(PyClickBatch {
            inner: Mutex::new(batch),
        })
    }
}
