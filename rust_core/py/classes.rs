//! The two classes of `slugline._core`: `SearchIndex` and `ClickBatch` (part of the Python boundary).
//! Each wraps its core struct in a lock, so Python threads may share one instance.

use super::{core_error, guard, lock, non_negative, read, released, write};
use crate::rollup::{ClickBatch, ClickInput};
use crate::search::{Link, SearchIndex};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

#[pyclass(name = "SearchIndex", module = "slugline._core", frozen)]
pub struct PySearchIndex {
    inner: RwLock<SearchIndex>,
}

#[pymethods]
impl PySearchIndex {
    #[new]
    fn new() -> Self {
        PySearchIndex {
            inner: RwLock::new(SearchIndex::new()),
        }
    }

    // Keyword-only: eight neighbouring strings and options are too easy to pass in the wrong order.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, id, slug, destination_url, title, description, note, hashtags, public, created = 0))]
    fn upsert(
        &self,
        id: &str,
        slug: String,
        destination_url: String,
        title: Option<String>,
        description: Option<String>,
        note: Option<String>,
        hashtags: Vec<String>,
        public: bool,
        created: i64,
    ) -> PyResult<()> {
        let link = Link {
            slug,
            destination_url,
            title,
            description,
            note,
            hashtags,
        };
        guard(|| {
            write(&self.inner).upsert_at(id, link, public, created);
            Ok(())
        })
    }

    fn remove(&self, id: &str) -> PyResult<bool> {
        guard(|| Ok(write(&self.inner).remove(id)))
    }

    fn __len__(&self) -> usize {
        read(&self.inner).len()
    }

    /// Heap bytes the index holds (computed from its buffers' capacities).
    fn memory_bytes(&self) -> usize {
        read(&self.inner).memory_bytes()
    }

    /// Gives back spare capacity; worth it once after loading many links.
    fn shrink_to_fit(&self, py: Python<'_>) -> PyResult<()> {
        released(py, || write(&self.inner).shrink_to_fit())
    }

    fn __contains__(&self, id: &str) -> bool {
        read(&self.inner).contains(id)
    }

    #[pyo3(signature = (query, public_only = false))]
    fn filter<'py>(&self, py: Python<'py>, query: &str, public_only: bool) -> PyResult<Bound<'py, PyList>> {
        // Ids are copied into one buffer while the lock is held (no GIL), then become Python strings.
        let (buffer, ends) = released(py, || {
            let index = read(&self.inner);
            let ids = index.filter(query, public_only);
            let mut buffer = String::with_capacity(ids.len() * 16);
            let ends: Vec<usize> = ids
                .into_iter()
                .map(|id| {
                    buffer.push_str(id);
                    buffer.len()
                })
                .collect();
            (buffer, ends)
        })?;
        let starts = std::iter::once(0).chain(ends.iter().copied());
        PyList::new(py, starts.zip(ends.iter()).map(|(start, &end)| &buffer[start..end]))
    }

    /// `(total, ids)`: how many links match `query`, and `limit` of their ids from `offset`, newest first (by
    /// `created`, ties by id) or oldest first. With `max_text`, None instead when checking the links' text would
    /// read more than that (`SearchIndex::filter_page_bounded`).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (query, *, public_only, newest_first, offset, limit, max_text = None))]
    fn filter_page<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        public_only: bool,
        newest_first: bool,
        offset: i64,
        limit: i64,
        max_text: Option<i64>,
    ) -> PyResult<Option<(usize, Bound<'py, PyList>)>> {
        let (offset, limit) = (non_negative(offset, "offset")?, non_negative(limit, "limit")?);
        let max_text = match max_text {
            Some(max) => Some(non_negative(max, "max_text")?),
            None => None,
        };
        let found = released(py, || {
            let index = read(&self.inner);
            let found = match max_text {
                Some(max) => index.filter_page_bounded(query, public_only, newest_first, offset, limit, max),
                None => Some(index.filter_page(query, public_only, newest_first, offset, limit)),
            };
            found.map(|(total, ids)| (total, ids.into_iter().map(str::to_owned).collect::<Vec<_>>()))
        })?;
        match found {
            Some((total, ids)) => Ok(Some((total, PyList::new(py, ids)?))),
            None => Ok(None),
        }
    }

    /// `(total, hits)`; None when `max_text` is given and highlighting the hits would read more than that (see
    /// `SearchIndex::search_bounded`).
    #[pyo3(signature = (query, limit = 20, public_only = false, max_text = None))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        limit: i64,
        public_only: bool,
        max_text: Option<i64>,
    ) -> PyResult<Option<(usize, Bound<'py, PyList>)>> {
        let limit = non_negative(limit, "limit")?;
        let max_text = match max_text {
            Some(max) => non_negative(max, "max_text")?,
            None => usize::MAX,
        };
        let found = released(py, || {
            read(&self.inner).search_bounded(query, limit, public_only, max_text)
        })?;
        let Some((total, hits)) = found else {
            return Ok(None);
        };
        let list = PyList::empty(py);
        for hit in hits {
            let highlights = PyDict::new(py);
            for (field, snippet) in hit.highlights {
                highlights.set_item(field, snippet)?;
            }
            list.append((hit.id, hit.score, highlights))?;
        }
        Ok(Some((total, list)))
    }
}

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
            non_negative(n, "n")?,
            non_negative(links, "links")?,
            non_negative(days, "days")?,
        );
        let batch = super::detached(py, || ClickBatch::synthetic(n, links, days, seed as u64))?;
        Ok(PyClickBatch {
            inner: Mutex::new(batch),
        })
    }
}
