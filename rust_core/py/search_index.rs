//! `slugline._core.SearchIndex`: an account's search index behind a read-write lock, so Python threads may share
//! one instance.

use super::{guard, non_negative, read, released, write};
use crate::search::{Link, SearchIndex};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::RwLock;

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
