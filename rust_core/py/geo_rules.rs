//! `slugline._core.RedirectRules` (a link's compiled redirect rules), `slugline._core.Variants` (its weighted
//! variants) and `slugline._core.GeoDb` (an MMDB file), all immutable once made, so any thread may use them without
//! a lock.

use super::{core_error, guard, released};
use crate::geo::GeoDb;
use crate::redirect_rules::{RuleSet, Visit};
use crate::variants::Variants;
use pyo3::prelude::*;
use std::path::PathBuf;

#[pyclass(name = "Variants", module = "slugline._core", frozen)]
pub struct PyVariants {
    inner: Variants,
}

#[pymethods]
impl PyVariants {
    /// The variants from their JSON text (`[{"to": "...", "weight": 3}, ...]`); `CoreError` if malformed.
    #[new]
    fn new(variants_json: &str) -> PyResult<Self> {
        guard(|| {
            Ok(PyVariants {
                inner: Variants::parse(variants_json).map_err(core_error)?,
            })
        })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The index of the variant for this visitor (client address and raw `User-Agent`) of `link_id` under the
    /// day's visitor `salt`: the same all day for the same visitor, shares following the weights.
    fn choose(&self, salt: &[u8], link_id: &str, ip: &str, user_agent: &[u8]) -> PyResult<usize> {
        guard(|| Ok(self.inner.choose(salt, link_id, ip, user_agent)))
    }
}

#[pyclass(name = "RedirectRules", module = "slugline._core", frozen)]
pub struct PyRedirectRules {
    inner: RuleSet,
    needs_country: bool,
}

#[pymethods]
impl PyRedirectRules {
    /// The rules from their JSON text (`[{"if": {...}, "to": "..."}, ...]`); `CoreError` if malformed.
    #[new]
    fn new(rules_json: &str) -> PyResult<Self> {
        guard(|| {
            let inner = RuleSet::parse(rules_json).map_err(core_error)?;
            let needs_country = inner.needs_country();
            Ok(PyRedirectRules { inner, needs_country })
        })
    }

    /// Whether a rule asks for the visitor's country.
    #[getter]
    fn needs_country(&self) -> bool {
        self.needs_country
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The index of the first rule that holds for this visitor (raw header bytes; `country` upper-case ISO code or
    /// None), or None: the link's own destination.
    #[pyo3(signature = (user_agent, accept_language, country = None))]
    fn choose(&self, user_agent: &[u8], accept_language: &[u8], country: Option<&str>) -> PyResult<Option<usize>> {
        guard(|| {
            Ok(self.inner.choose(&Visit {
                user_agent,
                accept_language,
                country,
            }))
        })
    }
}

#[pyclass(name = "GeoDb", module = "slugline._core", frozen)]
pub struct PyGeoDb {
    pub(super) inner: GeoDb,
}

#[pymethods]
impl PyGeoDb {
    /// The database from a whole MMDB file's bytes (read without the GIL); `CoreError` if it is not one.
    #[new]
    fn new(py: Python<'_>, data: Vec<u8>) -> PyResult<Self> {
        let made = released(py, || GeoDb::from_bytes(data))?;
        Ok(PyGeoDb {
            inner: made.map_err(core_error)?,
        })
    }

    /// The database in the MMDB file at `path`, memory-mapped (workers share its pages); `CoreError` if it cannot be
    /// opened or is not one. Replace the file by a rename while it is open, never rewrite it in place.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let made = released(py, || GeoDb::open(&path))?;
        Ok(PyGeoDb {
            inner: made.map_err(core_error)?,
        })
    }

    /// Whether the database is a memory map of its file.
    #[getter]
    fn mapped(&self) -> bool {
        self.inner.is_mapped()
    }

    /// The database's own name for its kind (`GeoLite2-City`, `DBIP-Country-Lite`, ...).
    #[getter]
    fn kind(&self) -> String {
        self.inner.kind().to_owned()
    }

    #[getter]
    fn has_cities(&self) -> bool {
        self.inner.has_cities()
    }

    /// The country (ISO 3166-1 alpha-2) of an address in text, IPv4 or IPv6; None if unknown.
    fn country(&self, ip: &str) -> PyResult<Option<String>> {
        guard(|| Ok(self.inner.country(ip)))
    }

    /// (country, region, city) of an address, each None where unknown.
    fn place(&self, ip: &str) -> PyResult<(Option<String>, Option<String>, Option<String>)> {
        guard(|| {
            let place = self.inner.place(ip);
            Ok((place.country, place.region, place.city))
        })
    }
}
