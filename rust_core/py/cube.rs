//! Roll-up cubes across the boundary: the cubes a batch adds (merged into the stored rows the caller read),
//! a link moved in or out of its account's views, and answers read from stored rows.

use super::queue::PyEncoded;
use super::{core_error, detached, guard};
use crate::codec::CodecError;
use crate::cube::delta::{apply_link, batch_cubes, click_cubes, compose as compose_view, CubeKey, Owner, ALL, PUBLIC};
use crate::cube::pack::{pack, DayCube};
use crate::cube::query::{
    analyse_with_packs, fitting_totals as fitting, top_links as top, Filters, LinkTotals, PackRow, Row, DIMENSIONS,
};
use crate::cube::{Blobs, Cube, MONTH, PROJECTIONS, VERSION_2};
use crate::fasthash::IdMap;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::collections::HashMap;

type Bytes = PyBackedBytes;
/// A link's stored row: (level, bucket, cube, uniques, hours).
type LinkRow = (u8, i64, Bytes, Option<Bytes>, Option<Bytes>);
/// A link's day row as a part of its view: (cube, uniques, hours, sketches).
type PartRow = (Bytes, Option<Bytes>, Option<Bytes>, Option<Bytes>);
/// A day row to read: (weight, epoch day, cube, uniques, hours).
type DayRow = (i64, i64, Bytes, Option<Bytes>, Option<Bytes>);
/// A pack to read: (weight, first epoch day, last epoch day, cube, uniques).
type PackIn = (i64, i64, i64, Bytes, Option<Bytes>);
/// A stored row: (account id, scope, level, bucket, cube, uniques, hours, links, sketches).
type StoredRow = (
    i64,
    String,
    u8,
    i64,
    Bytes,
    Option<Bytes>,
    Option<Bytes>,
    Option<Bytes>,
    Option<Bytes>,
);
/// A row to write; `cube` None deletes it (nothing is left in it).
type NewRow<'py> = (
    i64,
    String,
    u8,
    i64,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
);

fn decode(row: &StoredRow) -> Result<Cube, CodecError> {
    Cube::decode(
        &row.4,
        row.5.as_deref(),
        row.6.as_deref(),
        row.7.as_deref(),
        row.8.as_deref(),
    )
}

fn to_python<'py>(py: Python<'py>, key: CubeKey, blobs: Option<Blobs>) -> NewRow<'py> {
    let b = |v: Option<Vec<u8>>| v.map(|v| PyBytes::new(py, &v));
    match blobs {
        None => (key.0, key.1, key.2, key.3, None, None, None, None, None),
        Some(x) => (
            key.0,
            key.1,
            key.2,
            key.3,
            b(Some(x.cube)),
            b(x.uniques),
            b(x.hours),
            b(x.links),
            b(x.sketches),
        ),
    }
}

fn owners_of(owners: HashMap<String, (i64, bool)>) -> IdMap<String, Owner> {
    owners
        .into_iter()
        .map(|(k, (account, public))| (k, Owner { account, public }))
        .collect()
}

/// A click read back: (link id, unix time, device, browser, os, source, referrer host, visitor hash).
type ClickRow = (String, f64, String, String, String, String, Option<String>, String);
/// A click's country, city and variant, each if known.
type DetailRow = (Option<String>, Option<String>, Option<u8>);

/// The cubes one encoded batch adds, by row.
#[pyclass(name = "BatchCubes", module = "slugline._core", frozen)]
pub struct PyBatchCubes {
    cubes: IdMap<CubeKey, Cube>,
}

#[pymethods]
impl PyBatchCubes {
    /// `owners`: link id -> (account id, whether a public-only key sees the link); clicks of other links
    /// and bots' clicks are left out.
    #[new]
    fn new(py: Python<'_>, encoded: &PyEncoded, owners: HashMap<String, (i64, bool)>) -> PyResult<Self> {
        let owners = owners_of(owners);
        let cubes = detached(py, || Ok::<_, CodecError>(batch_cubes(&encoded.inner.batch, &owners)))?;
        Ok(PyBatchCubes { cubes })
    }

    /// The cubes of clicks read back from the click log: (link id, unix time, device, browser, os, source,
    /// referrer host or None, visitor hash); `details`, if given, holds each click's (country, city, variant),
    /// each None if unknown (without it, none is known).
    #[staticmethod]
    #[pyo3(signature = (clicks, owners, views = true, details = None))]
    fn from_clicks(
        py: Python<'_>,
        clicks: Vec<ClickRow>,
        owners: HashMap<String, (i64, bool)>,
        views: bool,
        details: Option<Vec<DetailRow>>,
    ) -> PyResult<Self> {
        if details.as_ref().is_some_and(|d| d.len() != clicks.len()) {
            return Err(core_error("details must hold one entry per click".to_owned()));
        }
        let owners = owners_of(owners);
        let cubes = detached(py, || {
            let unknown = (None, None, None);
            let rows = clicks.iter().enumerate().map(|(i, (l, t, d, b, o, s, r, v))| {
                let (country, city, variant) = details.as_ref().map_or(&unknown, |all| &all[i]);
                let click = (&**l, *t, &**d, &**b, &**o, &**s, r.as_deref(), &**v);
                (click, (country.as_deref(), city.as_deref(), *variant))
            });
            Ok::<_, CodecError>(click_cubes(rows, &owners, views))
        })?;
        Ok(PyBatchCubes { cubes })
    }

    /// The rows this batch touches: (account id, scope, level, bucket), sorted.
    fn keys(&self) -> Vec<CubeKey> {
        let mut keys: Vec<CubeKey> = self.cubes.keys().cloned().collect();
        keys.sort_unstable();
        keys
    }

    /// The rows to write: each stored row given (any of `keys`) with this batch merged in, and new ones; with
    /// `weight` -1, this batch taken out of them instead (a migration recounting clicks already counted). With
    /// `projected`, each link's month written comes with its projections (`crate::cube::PROJECTIONS`), rows of
    /// their own (the click writer keeps them in step with the month).
    #[pyo3(signature = (stored, weight = 1, projected = false))]
    fn merged<'py>(
        &self,
        py: Python<'py>,
        stored: Vec<StoredRow>,
        weight: i64,
        projected: bool,
    ) -> PyResult<Vec<NewRow<'py>>> {
        if weight != 1 && weight != -1 {
            return Err(core_error(format!("weight must be 1 or -1, got {weight}")));
        }
        let rows = detached(py, || -> Result<Vec<(CubeKey, Blobs)>, CodecError> {
            let mut by_key: IdMap<CubeKey, &StoredRow> = IdMap::default();
            for row in &stored {
                by_key.insert((row.0, row.1.clone(), row.2, row.3), row);
            }
            let mut out = Vec::with_capacity(self.cubes.len());
            for (key, delta) in &self.cubes {
                let mut cube = match by_key.get(key) {
                    Some(row) => decode(row)?,
                    None => Cube::default(),
                };
                cube.merge(delta, weight);
                out.push((key.clone(), cube.encode()));
                if projected && key.2 == MONTH && key.1 != ALL && key.1 != PUBLIC {
                    for level in PROJECTIONS {
                        let blobs = Blobs {
                            cube: cube.encode_projection(level),
                            ..Blobs::default()
                        };
                        out.push(((key.0, key.1.clone(), level, key.3), blobs));
                    }
                }
            }
            out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            Ok(out)
        })?;
        Ok(rows.into_iter().map(|(k, b)| to_python(py, k, Some(b))).collect())
    }
}

/// One link's stored cubes `(level, bucket, cube, uniques, hours)` added to (`weight` 1) or taken out of (-1)
/// the account views `scopes` of `account`, whose stored rows are `stored`. Rows left empty come back with
/// `cube` None, to be deleted; a row taken out of that is not stored is left alone.
#[pyfunction]
pub fn move_link<'py>(
    py: Python<'py>,
    link_id: &str,
    account: i64,
    scopes: Vec<String>,
    link_rows: Vec<LinkRow>,
    stored: Vec<StoredRow>,
    weight: i64,
) -> PyResult<Vec<NewRow<'py>>> {
    if weight != 1 && weight != -1 {
        return Err(core_error(format!("weight must be 1 or -1, got {weight}")));
    }
    let rows = detached(py, || -> Result<Vec<(CubeKey, Option<Blobs>)>, CodecError> {
        let mut targets: IdMap<CubeKey, Cube> = IdMap::default();
        for row in &stored {
            targets.insert((row.0, row.1.clone(), row.2, row.3), decode(row)?);
        }
        let mut out = Vec::new();
        for (level, bucket, cube, uniques, hours) in &link_rows {
            let link_cube = Cube::decode(cube, uniques.as_deref(), hours.as_deref(), None, None)?;
            for scope in &scopes {
                let key = (account, scope.clone(), *level, *bucket);
                let Some(target) = (match targets.get_mut(&key) {
                    Some(t) => Some(t),
                    None if weight > 0 => Some(targets.entry(key.clone()).or_default()),
                    None => None,
                }) else {
                    continue;
                };
                apply_link(target, &link_cube, link_id, weight, true);
                out.push(key);
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out
            .into_iter()
            .map(|key| {
                let cube = &targets[&key];
                let blobs = (!cube.is_empty()).then(|| cube.encode());
                (key, blobs)
            })
            .collect())
    })?;
    Ok(rows.into_iter().map(|(k, b)| to_python(py, k, b)).collect())
}

/// `stored` (an account view's day row) made again from its links' day cubes `parts` `(cube, uniques, hours,
/// sketches)`, its per-link counts kept.
#[pyfunction]
pub fn recount<'py>(py: Python<'py>, stored: StoredRow, parts: Vec<PartRow>) -> PyResult<NewRow<'py>> {
    let key = (stored.0, stored.1.clone(), stored.2, stored.3);
    let blobs = detached(py, || -> Result<Option<Blobs>, CodecError> {
        let mut cube = decode(&stored)?;
        let parts = parts
            .iter()
            .map(|(c, u, h, s)| Cube::decode(c, u.as_deref(), h.as_deref(), None, s.as_deref()))
            .collect::<Result<Vec<_>, _>>()?;
        cube.rebuild(&parts);
        Ok((!cube.is_empty()).then(|| cube.encode()))
    })?;
    Ok(to_python(py, key, blobs))
}

/// `stored` as a cube of the version before variants (2), its clicks and visitors of every variant counted as
/// without one: what 0021's downgrade leaves for the code before it, which cannot read version 3.
#[pyfunction]
pub fn without_variants<'py>(py: Python<'py>, stored: StoredRow) -> PyResult<NewRow<'py>> {
    let key = (stored.0, stored.1.clone(), stored.2, stored.3);
    let blobs = detached(py, || -> Result<Blobs, CodecError> {
        Ok(decode(&stored)?.without_variants().encode_as(VERSION_2))
    })?;
    Ok(to_python(py, key, Some(blobs)))
}

/// The row `key` of an account view made from its links' cubes `parts` `(link id, cube, uniques, hours,
/// sketches)`, counting clicks per link.
#[pyfunction]
pub fn compose<'py>(py: Python<'py>, key: CubeKey, parts: Vec<(String, PartRow)>) -> PyResult<NewRow<'py>> {
    let blobs = detached(py, || -> Result<Option<Blobs>, CodecError> {
        let parts = parts
            .iter()
            .map(|(link, (c, u, h, s))| {
                Ok((
                    link.clone(),
                    Cube::decode(c, u.as_deref(), h.as_deref(), None, s.as_deref())?,
                ))
            })
            .collect::<Result<Vec<_>, CodecError>>()?;
        let view = compose_view(&parts, true);
        Ok((!view.is_empty()).then(|| view.encode()))
    })?;
    Ok(to_python(py, key, blobs))
}

/// Clicks, visitors and breakdowns of stored day rows `(weight, epoch day, cube, uniques, hours)` and packs
/// `(weight, first day, last day, cube, uniques)` whose clicks fit every filter in `filters` (dimension ->
/// lowercased value); per hour too when `hours` (packs keep no hours).
#[pyfunction]
#[pyo3(signature = (rows, filters, hours, packs = Vec::new()))]
pub fn analyse<'py>(
    py: Python<'py>,
    rows: Vec<DayRow>,
    filters: HashMap<String, String>,
    hours: bool,
    packs: Vec<PackIn>,
) -> PyResult<Bound<'py, PyDict>> {
    let wanted = parse_filters(filters)?;
    let answer = detached(py, || {
        let rows: Vec<Row<'_>> = rows
            .iter()
            .map(|(weight, day, cube, uniques, hours)| Row {
                weight: *weight,
                day: *day,
                cube,
                uniques: uniques.as_deref(),
                hours: hours.as_deref(),
            })
            .collect();
        let packs: Vec<PackRow<'_>> = packs
            .iter()
            .map(|(weight, first, last, cube, uniques)| PackRow {
                weight: *weight,
                first: *first,
                last: *last,
                cube,
                uniques: uniques.as_deref(),
            })
            .collect();
        analyse_with_packs(&rows, &packs, &wanted, hours)
    })?;
    guard(|| {
        let out = PyDict::new(py);
        out.set_item("total", answer.total)?;
        out.set_item("visitors", answer.visitors)?;
        out.set_item("days", answer.days)?;
        out.set_item("hours", answer.hours)?;
        let breakdowns = PyDict::new(py);
        for (name, counts) in DIMENSIONS.iter().zip(answer.breakdowns) {
            let mut ranked: Vec<(String, i64)> = counts.into_iter().filter(|&(_, n)| n > 0).collect();
            ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            breakdowns.set_item(name, ranked)?;
        }
        out.set_item("breakdowns", breakdowns)?;
        out.set_item("variant_visitors", answer.variant_visitors)?;
        Ok(out)
    })
}

/// Filters by dimension name, values lowercased.
fn parse_filters(filters: HashMap<String, String>) -> PyResult<Filters> {
    let mut wanted: [Option<String>; DIMENSIONS.len()] = Default::default();
    for (name, value) in filters {
        let at = DIMENSIONS
            .iter()
            .position(|d| *d == name)
            .ok_or_else(|| core_error(format!("no dimension {name}")))?;
        wanted[at] = Some(value.to_lowercase());
    }
    Ok(Filters(wanted))
}

/// The clicks that fit `filters` in each group of `(group, weight, cube column)` rows, as {group: clicks}: a
/// group without clicks that fit is 0 or absent.
#[pyfunction]
pub fn fitting_totals(
    py: Python<'_>,
    rows: Vec<(i64, i64, Bytes)>,
    filters: HashMap<String, String>,
) -> PyResult<HashMap<i64, i64>> {
    let wanted = parse_filters(filters)?;
    let totals = detached(py, || {
        let rows: Vec<(i64, i64, &[u8])> = rows.iter().map(|(g, w, c)| (*g, *w, &c[..])).collect();
        fitting(&rows, &wanted)
    })?;
    Ok(totals.into_iter().collect())
}

/// The level of the projection of a link's month (`crate::cube::PROJECTIONS`) that totals what the month does under
/// `filters`, if one does.
#[pyfunction]
pub fn projection_for(filters: HashMap<String, String>) -> PyResult<Option<u8>> {
    Ok(parse_filters(filters)?.projection())
}

/// The `n` most clicked links over stored per-link counts `(weight, links)`, as (link id, clicks).
#[pyfunction]
pub fn top_links(py: Python<'_>, rows: Vec<(i64, Bytes)>, n: usize) -> PyResult<Vec<(String, i64)>> {
    detached(py, || {
        let rows: Vec<(i64, &[u8])> = rows.iter().map(|(w, b)| (*w, &b[..])).collect();
        top(&rows, n)
    })
}

/// A month's day cubes `(epoch day, cube, uniques, links)` of a view as one pack: its `(cube, uniques, links)`
/// columns.
#[pyfunction]
pub fn pack_days<'py>(
    py: Python<'py>,
    days: Vec<(i64, Bytes, Option<Bytes>, Option<Bytes>)>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (cube, uniques, links) = detached(py, || {
        let days: Vec<DayCube<'_>> = days
            .iter()
            .map(|(d, c, u, l)| (*d, &c[..], u.as_deref(), l.as_deref()))
            .collect();
        pack(&days)
    })?;
    let b = |v: Option<Vec<u8>>| v.map(|v| PyBytes::new(py, &v));
    PyTuple::new(py, [Some(PyBytes::new(py, &cube)), b(uniques), b(links)])
}

/// Every link's clicks over a period, kept on this side: a year's 10,000 links are asked for their top and for a
/// few links' counts, never all at once, so none of them is made a Python object until asked.
#[pyclass(name = "LinkCounts", module = "slugline._core", frozen)]
pub struct PyLinkCounts(LinkTotals);

#[pymethods]
impl PyLinkCounts {
    /// The `n` most clicked links, as (link id, clicks).
    fn top(&self, n: usize) -> Vec<(String, i64)> {
        self.0.top(n)
    }

    /// The `n` most clicked links with the clicks of `rows` of per-link counts `(weight, links)` added (the days
    /// since these counts were made), as (link id, clicks).
    fn top_with(&self, py: Python<'_>, rows: Vec<(i64, Bytes)>, n: usize) -> PyResult<Vec<(String, i64)>> {
        detached(py, || {
            let rows: Vec<(i64, &[u8])> = rows.iter().map(|(w, b)| (*w, &b[..])).collect();
            self.0.top_with(&rows, n)
        })
    }

    /// The clicks of each of `links` (0 for a link without any).
    fn get(&self, links: Vec<String>) -> Vec<i64> {
        links.iter().map(|l| self.0.get(l)).collect()
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }

    /// Bytes held, roughly: what a cache of these counts its budget in.
    fn __sizeof__(&self) -> usize {
        std::mem::size_of::<Self>() + self.0.bytes()
    }
}

/// Every link's clicks over stored per-link counts `(weight, links)`, kept in the core (`LinkCounts`).
#[pyfunction]
pub fn link_counts(py: Python<'_>, rows: Vec<(i64, Bytes)>) -> PyResult<PyLinkCounts> {
    detached(py, || {
        let rows: Vec<(i64, &[u8])> = rows.iter().map(|(w, b)| (*w, &b[..])).collect();
        LinkTotals::new(&rows).map(PyLinkCounts)
    })
}

/// The projections (`crate::cube::PROJECTIONS`, in that order) of a link's stored month `cube` column: what a
/// migration writes beside months kept before the click writer wrote them.
#[pyfunction]
pub fn projections<'py>(py: Python<'py>, cube: Bytes) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let made = detached(py, || -> Result<Vec<Vec<u8>>, CodecError> {
        let cube = Cube::decode(&cube, None, None, None, None)?;
        Ok(PROJECTIONS.iter().map(|&level| cube.encode_projection(level)).collect())
    })?;
    Ok(made.iter().map(|b| PyBytes::new(py, b)).collect())
}
