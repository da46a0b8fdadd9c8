//! The Python boundary (`slugline._core`): argument conversion, invalid input turned into `CoreError`, panics
//! into `CorePanic` (a bug must never pass for bad input), and the GIL released around heavy work.

use crate::{keys, linkjson, password, referrer, search, slug, useragent};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList, PyString, PyTuple};
use std::any::Any;
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

mod click_batch;
mod cube;
mod geo_rules;
mod queue;
mod search_index;

create_exception!(
    slugline._core,
    CoreError,
    PyValueError,
    "Raised for invalid input to a core function."
);

create_exception!(
    slugline._core,
    CorePanic,
    PyRuntimeError,
    "Raised when the core hits a bug (a Rust panic); never a sign of bad input."
);

fn core_error(e: impl Display) -> PyErr {
    CoreError::new_err(e.to_string())
}

/// A caught panic, as the message `CorePanic` will carry.
struct Panic(String);

impl From<Panic> for PyErr {
    fn from(panic: Panic) -> Self {
        CorePanic::new_err(panic.0)
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> Panic {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    Panic(format!("internal error in slugline core: {text}"))
}

/// Runs `body`, stopping a panic before it unwinds into Python.
/// Safe to call with the GIL released: it touches no Python object.
fn catch<T>(body: impl FnOnce() -> T) -> Result<T, Panic> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| panic_message(payload.as_ref()))
}

/// `catch` for bodies that already return `PyResult` (holding the GIL).
fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch(body)?
}

/// Runs `body` with the GIL released, catching panics. `body` must not touch Python objects.
fn released<T: Send>(py: Python<'_>, body: impl FnOnce() -> T + Send) -> PyResult<T> {
    Ok(py.detach(|| catch(body))?)
}

/// `released` for bodies that can fail with a core error.
fn detached<T: Send, E: Display + Send>(py: Python<'_>, body: impl FnOnce() -> Result<T, E> + Send) -> PyResult<T> {
    released(py, body)?.map_err(core_error)
}

// Locks are only ever awaited by code that needs no Python object while holding them, so a thread that
// waits for a lock with the GIL held cannot deadlock with one that holds the lock and wants the GIL.
// A panic is caught and reported, so a poisoned lock still holds consistent-enough data to keep serving.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn non_negative(value: i64, name: &str) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| CoreError::new_err(format!("{name} must be >= 0, got {value}")))
}

// ---- slugs and ids -------------------------------------------------------------------------------

#[pyfunction]
#[pyo3(signature = (length = 7))]
fn generate_slug(length: i64) -> PyResult<String> {
    guard(|| {
        let length = usize::try_from(length)
            .map_err(|_| CoreError::new_err(format!("slug length must be between 1 and 64, got {length}")))?;
        slug::generate_slug(length).map_err(core_error)
    })
}

#[pyfunction]
fn slug_error(slug: &str) -> PyResult<Option<String>> {
    guard(|| Ok(slug::slug_error(slug)))
}

#[pyfunction]
fn generate_link_id() -> PyResult<String> {
    guard(|| slug::generate_link_id().map_err(core_error))
}

// ---- keys and tokens -----------------------------------------------------------------------------

#[pyfunction]
fn generate_key(kind: &str) -> PyResult<String> {
    guard(|| keys::generate_key(kind).map_err(core_error))
}

/// Never raises for bad input: anything that is not a well-formed token (including non-strings) is `None`.
#[pyfunction]
fn key_kind(token: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    let Ok(token) = token.extract::<&str>() else {
        return Ok(None);
    };
    Ok(catch(|| keys::key_kind(token))?.map(keys::KeyKind::name))
}

#[pyfunction]
fn hash_key(secret: &[u8], token: &str) -> PyResult<String> {
    guard(|| Ok(keys::hash_key(secret, token)))
}

#[pyfunction]
fn verify_key(secret: &[u8], token: &str, expected_hex: &str) -> PyResult<bool> {
    guard(|| Ok(keys::verify_key(secret, token, expected_hex)))
}

#[pyfunction]
fn keyed_hash(secret: &[u8], message: &str) -> PyResult<String> {
    guard(|| Ok(keys::keyed_hash(secret, message)))
}

// ---- passwords -----------------------------------------------------------------------------------

#[pyfunction]
fn hash_password(py: Python<'_>, password: &str) -> PyResult<String> {
    detached(py, || password::hash_password(password))
}

#[pyfunction]
fn verify_password(py: Python<'_>, password: &str, encoded: &str) -> PyResult<bool> {
    detached(py, || password::verify_password(password, encoded))
}

// ---- search --------------------------------------------------------------------------------------

#[pyfunction]
fn normalize(text: &str) -> PyResult<String> {
    guard(|| Ok(search::normalize(text)))
}

// ---- link JSON -----------------------------------------------------------------------------------

/// A value that is exactly a `str` (a subclass may render itself otherwise in Python), as text.
fn exact_text<'a>(value: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    value.cast_exact::<PyString>().ok()?.to_str().ok()
}

/// One row's hashtags: a list of strings (PostgreSQL's driver parses JSON) or the stored JSON text (SQLite's).
fn row_hashtags(value: &Bound<'_, PyAny>) -> Option<Vec<String>> {
    if let Some(stored) = exact_text(value) {
        return linkjson::parse_hashtags(stored);
    }
    let tags = value.cast_exact::<PyList>().ok()?;
    tags.iter().map(|tag| exact_text(&tag).map(str::to_owned)).collect()
}

/// One row's link JSON, or `None` where a value is not of the shapes `linkjson::write_link` takes. Only exact
/// types are taken (a tuple, `str`, `int`, `list`): Python's `link_json` would go through a subclass's own
/// methods, and orjson writes a `bool` as `true`, not `1`.
fn row_json<'py>(row: &Bound<'py, PyAny>, base_url: &str, out: &mut Vec<u8>) -> Option<Bound<'py, PyBytes>> {
    let row = row.cast_exact::<PyTuple>().ok()?;
    if row.len() != 11 {
        return None;
    }
    let values: Vec<Bound<'py, PyAny>> = row.iter().collect();
    let text = |i: usize| exact_text(&values[i]);
    let optional = |i: usize| match &values[i] {
        value if value.is_none() => Some(None),
        value => exact_text(value).map(Some),
    };
    let hashtags = row_hashtags(&values[6])?;
    let link = linkjson::LinkRow {
        id: text(0)?,
        slug: text(1)?,
        destination_url: text(2)?,
        title: optional(3)?,
        description: optional(4)?,
        note: optional(5)?,
        hashtags: &hashtags,
        visibility: text(7)?,
        clicks: values[8].cast_exact::<PyInt>().ok()?.extract::<i64>().ok()?,
        created_at: text(9)?,
        updated_at: text(10)?,
    };
    out.clear();
    linkjson::write_link(out, &link, base_url)?;
    Some(PyBytes::new(row.py(), out))
}

/// Each row's link JSON (`slugline.links.service.link_json`, as orjson writes it), or `None` for a row whose
/// values are of other shapes (the caller renders those itself), and for every row when `base_url` is not
/// exactly a `str`.
#[pyfunction]
fn link_json_rows<'py>(
    rows: &Bound<'py, PyList>,
    base_url: &Bound<'py, PyAny>,
) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
    guard(|| {
        let Some(base_url) = exact_text(base_url) else {
            return Ok(vec![None; rows.len()]);
        };
        let mut out = Vec::with_capacity(512);
        Ok(rows.iter().map(|row| row_json(&row, base_url, &mut out)).collect())
    })
}

// ---- clicks --------------------------------------------------------------------------------------

#[pyfunction]
fn classify_user_agent(user_agent: &str) -> PyResult<(&'static str, &'static str, &'static str)> {
    guard(|| {
        let agent = useragent::classify_user_agent(user_agent);
        Ok((agent.device.name(), agent.browser, agent.os))
    })
}

/// Whether a User-Agent header's raw bytes (None: no header) are a link-preview crawler's.
#[pyfunction]
#[pyo3(signature = (user_agent))]
fn is_preview_crawler(user_agent: Option<&[u8]>) -> PyResult<bool> {
    guard(|| Ok(user_agent.is_some_and(useragent::is_preview_crawler)))
}

#[pyfunction]
fn referrer_host(referrer: Option<&str>) -> PyResult<Option<String>> {
    guard(|| Ok(referrer::referrer_host(referrer)))
}

#[pyfunction]
fn classify_source(utm_source: Option<&str>, via_qr: bool, referrer: Option<&str>) -> PyResult<String> {
    guard(|| Ok(referrer::classify_source(utm_source, via_qr, referrer)))
}

// ---- test hook -----------------------------------------------------------------------------------

/// Panics on purpose, so tests can prove a Rust panic surfaces as `CorePanic`, from code that holds the GIL
/// and from code that released it (like the password functions).
#[cfg(feature = "testing")]
#[pyfunction]
#[pyo3(signature = (message, detach = false))]
fn _panic(py: Python<'_>, message: &str, detach: bool) -> PyResult<()> {
    if detach {
        released(py, || panic!("{message}"))
    } else {
        guard(|| panic!("{message}"))
    }
}

/// Slugline's Rust core: ids, keys, passwords, search, click classification.
#[pymodule]
mod _core {
    use pyo3::prelude::*;
    use pyo3::types::PyFrozenSet;

    #[pymodule_export]
    use super::click_batch::PyClickBatch;
    #[pymodule_export]
    use super::cube::{
        analyse, compose, fitting_totals, link_counts, move_link, pack_days, projection_for, projections, recount,
        top_links, without_variants, PyBatchCubes, PyLinkCounts,
    };
    #[pymodule_export]
    use super::geo_rules::{PyGeoDb, PyRedirectRules, PyVariants};
    #[pymodule_export]
    use super::queue::{PyClickQueue, PyClicks, PyEncoded, PyValueChunks};
    #[pymodule_export]
    use super::search_index::PySearchIndex;
    #[pymodule_export]
    use super::{
        classify_source, classify_user_agent, generate_key, generate_link_id, generate_slug, hash_key, hash_password,
        is_preview_crawler, key_kind, keyed_hash, link_json_rows, normalize, referrer_host, slug_error, verify_key,
        verify_password, CoreError, CorePanic,
    };

    #[cfg(feature = "testing")]
    #[pymodule_export]
    use super::_panic;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("RESERVED_SLUGS", PyFrozenSet::new(m.py(), crate::slug::RESERVED_SLUGS)?)?;
        let names = crate::useragent::names();
        m.add("DEVICES", PyFrozenSet::new(m.py(), names.0)?)?;
        m.add("BROWSERS", PyFrozenSet::new(m.py(), names.1)?)?;
        m.add("SYSTEMS", PyFrozenSet::new(m.py(), names.2)?)
    }
}
