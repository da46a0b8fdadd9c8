//! The Python boundary (`slugline._core`): argument conversion, errors turned into `CoreError`,
//! panics caught before they reach Python, and the GIL released around heavy work.

use crate::{agent, keys, password, referrer, search, slug};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyFrozenSet;
use std::any::Any;
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

mod classes;
use classes::{PyClickBatch, PySearchIndex};

create_exception!(
    slugline._core,
    CoreError,
    PyValueError,
    "Raised for invalid input to a core function, and for a Rust panic."
);

fn core_error(e: impl Display) -> PyErr {
    CoreError::new_err(e.to_string())
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("internal error in slugline core: {text}")
}

/// Runs `body`, turning a panic into a `CoreError` message instead of unwinding into Python.
/// Safe to call with the GIL released: it touches no Python object.
fn catch<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| panic_message(payload.as_ref()))
}

/// `catch` for bodies that already return `PyResult` (holding the GIL).
fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch(body).map_err(CoreError::new_err)?
}

/// Runs `body` with the GIL released, catching panics. `body` must not touch Python objects.
fn released<T: Send>(py: Python<'_>, body: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch(body)).map_err(CoreError::new_err)
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

/// Never raises: anything that is not a well-formed token (including non-strings) is `None`.
#[pyfunction]
fn key_kind(token: &Bound<'_, PyAny>) -> Option<&'static str> {
    let token = token.extract::<&str>().ok()?;
    catch(|| keys::key_kind(token)).ok().flatten().map(keys::KeyKind::name)
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

// ---- clicks --------------------------------------------------------------------------------------

#[pyfunction]
fn classify_user_agent(user_agent: &str) -> PyResult<(&'static str, &'static str, &'static str)> {
    guard(|| {
        let agent = agent::classify_user_agent(user_agent);
        Ok((agent.device.name(), agent.browser, agent.os))
    })
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

/// Panics on purpose, so tests can prove a Rust panic surfaces as `CoreError`.
#[pyfunction]
fn _panic(message: &str) -> PyResult<()> {
    guard(|| panic!("{message}"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CoreError", py.get_type::<CoreError>())?;
    m.add("RESERVED_SLUGS", PyFrozenSet::new(py, slug::RESERVED_SLUGS)?)?;
    m.add_class::<PySearchIndex>()?;
    m.add_class::<PyClickBatch>()?;
    m.add_function(wrap_pyfunction!(generate_slug, m)?)?;
    m.add_function(wrap_pyfunction!(slug_error, m)?)?;
    m.add_function(wrap_pyfunction!(generate_link_id, m)?)?;
    m.add_function(wrap_pyfunction!(generate_key, m)?)?;
    m.add_function(wrap_pyfunction!(key_kind, m)?)?;
    m.add_function(wrap_pyfunction!(hash_key, m)?)?;
    m.add_function(wrap_pyfunction!(verify_key, m)?)?;
    m.add_function(wrap_pyfunction!(keyed_hash, m)?)?;
    m.add_function(wrap_pyfunction!(hash_password, m)?)?;
    m.add_function(wrap_pyfunction!(verify_password, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(classify_user_agent, m)?)?;
    m.add_function(wrap_pyfunction!(referrer_host, m)?)?;
    m.add_function(wrap_pyfunction!(classify_source, m)?)?;
    m.add_function(wrap_pyfunction!(_panic, m)?)?;
    Ok(())
}
