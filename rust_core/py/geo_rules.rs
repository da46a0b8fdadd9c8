//! `slugline._core.RedirectRules` (a link's compiled redirect rules) and `slugline._core.GeoDb` (an MMDB file),
//! both immutable once made, so any thread may use them without a lock.

use super::{core_error, guard, released};
use crate::geo::GeoDb;
use crate::redirect_rules::{RuleSet, Visit};
use pyo3::prelude::*;

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
