//! What a click batch adds to the cubes, and moving a link's cubes in or out of its account's views.

use super::{Cube, Dims, DAY, MASKS, MONTH, NONE, NO_VARIANT};
use crate::fasthash::IdMap;
use crate::rollup::ClickBatch;
use crate::useragent::Device;

/// A cube's row: (account id, scope, level, bucket). Scope `""` is every link of the account, `"p"` its
/// public and unlisted links (what a public-only key sees), anything else one link's id.
pub type CubeKey = (i64, String, u8, i64);
pub const ALL: &str = "";
pub const PUBLIC: &str = "p";

/// Whose a link is, and whether a public-only key sees it.
#[derive(Debug, Clone, Copy)]
pub struct Owner {
    pub account: i64,
    pub public: bool,
}

/// Days since 1970-01-01 to months since January 1970 (the civil calendar, proleptic Gregorian).
pub fn month_of(epoch_day: i64) -> i64 {
    // Howard Hinnant's `civil_from_days`.
    let z = epoch_day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year - 1970) * 12 + month - 1
}

fn visitor_bits(visitor: &str) -> u32 {
    visitor
        .get(..8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}

impl Cube {
    fn intern(&mut self, s: Option<&str>) -> u32 {
        s.map_or(NONE, |s| self.strings.intern(s))
    }

    fn dims(&mut self, parts: &Parts<'_, '_>) -> Dims {
        let dims = Dims {
            device: parts.device,
            browser: self.intern(Some(parts.browser)),
            os: self.intern(Some(parts.os)),
            source: self.intern(Some(parts.source)),
            referrer: self.intern(parts.referrer),
            country: self.intern(parts.country),
            city: self.intern(parts.city),
            variant: parts.variant.unwrap_or(NO_VARIANT),
        };
        self.admit(dims)
    }

    fn count(&mut self, parts: &Parts<'_, '_>, hour: Option<u8>, link: Option<&str>, n: i64) {
        let dims = self.dims(parts);
        *self.combos.entry(dims).or_insert(0) += n;
        if let Some(hour) = hour {
            *self.hours.entry((hour, dims)).or_insert(0) += n;
        }
        if let Some(link) = link {
            match self.links.get_mut(link) {
                Some(count) => *count += n,
                None => {
                    self.links.insert(link.to_owned(), n);
                }
            }
        }
    }

    fn visit(&mut self, parts: &Parts<'_, '_>, visitors: &[u32]) {
        let dims = self.dims(parts);
        for mask in MASKS {
            let sketch = self.sketches.entry((mask, dims.masked(mask))).or_default();
            for &visitor in visitors {
                sketch.insert(visitor);
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Parts<'a, 'b> {
    device: u8,
    browser: &'b str,
    os: &'b str,
    source: &'a str,
    referrer: Option<&'a str>,
    country: Option<&'a str>,
    city: Option<&'a str>,
    variant: Option<u8>,
}

/// A click as stored: (link id, unix time, device, browser, os, source, referrer host, visitor hash).
/// Device, browser and os may live apart from the rest (a batch's are static names).
pub type StoredClick<'a, 'b> = (
    &'a str,
    f64,
    &'b str,
    &'b str,
    &'b str,
    &'a str,
    Option<&'a str>,
    &'a str,
);

/// The cubes a batch's clicks make, bots and links without an owner left out: each link's day and month,
/// and the same for its account's views, which also count clicks per link.
pub fn batch_cubes(batch: &ClickBatch, owners: &IdMap<String, Owner>) -> IdMap<CubeKey, Cube> {
    let details = batch
        .places_from(0)
        .zip(batch.variants_from(0))
        .map(|([country, _, city], variant)| (country, city, variant));
    click_cubes(batch.rows().zip(details), owners, true)
}

/// A click's country and city, each if known, and its variant if its link has variants.
pub type ClickDetails<'a> = (Option<&'a str>, Option<&'a str>, Option<u8>);

/// Where a string lives: equal places hold equal strings, so clicks can be grouped without hashing their text
/// (a batch's strings are interned: its clicks share them). Equal strings in different places only make more groups.
fn place(s: &str) -> (usize, usize) {
    (s.as_ptr() as usize, s.len())
}

type Place = (usize, usize);
/// A group of a batch's clicks: link, day, device, browser, os, source, referrer, country, city, variant.
type Group = (
    Place,
    i64,
    u8,
    Place,
    Place,
    Place,
    Option<Place>,
    Option<Place>,
    Option<Place>,
    Option<u8>,
);

/// `batch_cubes` of clicks read back from the click log; without `views`, only the links' own cubes.
///
/// The clicks are grouped first, by combination and hour and, for visitors, by combination and day with each
/// visitor once: a cube is then touched once per group and visitor, not once per click in each of its views
/// and levels.
pub fn click_cubes<'a, 'b>(
    clicks: impl Iterator<Item = (StoredClick<'a, 'b>, ClickDetails<'a>)>,
    owners: &IdMap<String, Owner>,
    views: bool,
) -> IdMap<CubeKey, Cube> {
    let mut counts: IdMap<(Group, u8), (Parts<'a, 'b>, &'a str, i64)> = IdMap::default();
    let mut visitors: IdMap<Group, (Parts<'a, 'b>, &'a str, Vec<u32>)> = IdMap::default();
    for ((link, timestamp, device, browser, os, source, referrer, visitor), (country, city, variant)) in clicks {
        let (Some(_), Some(device)) = (owners.get(link), Device::ALL.iter().position(|d| d.name() == device)) else {
            continue;
        };
        if Device::ALL[device] == Device::Bot {
            continue;
        }
        let day = (timestamp / 86_400.0).floor() as i64;
        let hour = ((timestamp - day as f64 * 86_400.0) / 3600.0).floor().clamp(0.0, 23.0) as u8;
        let device = device as u8;
        let group = (
            place(link),
            day,
            device,
            place(browser),
            place(os),
            place(source),
            referrer.map(place),
            country.map(place),
            city.map(place),
            variant,
        );
        let parts = Parts {
            device,
            browser,
            os,
            source,
            referrer,
            country,
            city,
            variant,
        };
        counts.entry((group, hour)).or_insert((parts, link, 0)).2 += 1;
        visitors
            .entry(group)
            .or_insert((parts, link, Vec::new()))
            .2
            .push(visitor_bits(visitor));
    }
    let mut cubes: IdMap<CubeKey, Cube> = IdMap::default();
    for (&((_, day, ..), hour), (parts, link, n)) in &counts {
        for (scope, per_link, account) in scopes(owners, link, views) {
            let counted = per_link.then_some(*link);
            let parts = &in_view(parts, per_link);
            let key = |level, bucket| (account, scope.to_owned(), level, bucket);
            cubes
                .entry(key(DAY, day))
                .or_default()
                .count(parts, Some(hour), counted, *n);
            cubes
                .entry(key(MONTH, month_of(day)))
                .or_default()
                .count(parts, None, counted, *n);
        }
    }
    for ((_, day, ..), (parts, link, mut seen)) in visitors {
        seen.sort_unstable();
        seen.dedup();
        for (scope, per_link, account) in scopes(owners, link, views) {
            cubes
                .entry((account, scope.to_owned(), DAY, day))
                .or_default()
                .visit(&in_view(&parts, per_link), &seen);
        }
    }
    for cube in cubes.values_mut() {
        let estimates: Vec<_> = cube.sketches.iter().map(|(&k, s)| (k, s.estimate())).collect();
        cube.uniques.extend(estimates);
    }
    cubes
}

/// A click's parts as a view counts them: an account's views keep no variants (`Cube::merge_into_view`).
fn in_view<'a, 'b>(parts: &Parts<'a, 'b>, account_view: bool) -> Parts<'a, 'b> {
    Parts {
        variant: if account_view { None } else { parts.variant },
        ..*parts
    }
}

/// The views a link's clicks count in: (scope, whether per-link counts are kept, account).
fn scopes<'s>(owners: &IdMap<String, Owner>, link: &'s str, views: bool) -> Vec<(&'s str, bool, i64)> {
    let Some(owner) = owners.get(link) else {
        return Vec::new();
    };
    let mut out = vec![(link, false, owner.account)];
    if views {
        out.push((ALL, true, owner.account));
        if owner.public {
            out.push((PUBLIC, true, owner.account));
        }
    }
    out
}

/// A view's cube made from the cubes of its links (`(link id, cube)`), counting clicks per link.
pub fn compose(parts: &[(String, Cube)], per_link: bool) -> Cube {
    let mut view = Cube::default();
    for (link, cube) in parts {
        view.merge_into_view(cube, 1);
        if per_link && cube.total() > 0 {
            view.links.insert(link.clone(), cube.total());
        }
    }
    view
}

/// Adds (`weight` 1) or takes out (-1) one link's cube into an account view's cube of the same bucket.
pub fn apply_link(target: &mut Cube, link_cube: &Cube, link_id: &str, weight: i64, per_link: bool) {
    target.merge_into_view(link_cube, weight);
    if per_link {
        let n = link_cube.total() * weight;
        let left = target.links.get(link_id).copied().unwrap_or(0) + n;
        if left > 0 {
            target.links.insert(link_id.to_owned(), left);
        } else {
            target.links.remove(link_id);
        }
    }
    if weight < 0 {
        target.prune();
    }
}

#[cfg(test)]
mod tests {
    use super::month_of;

    #[test]
    fn months_since_the_epoch() {
        assert_eq!(month_of(0), 0); // 1970-01-01
        assert_eq!(month_of(30), 0); // 1970-01-31
        assert_eq!(month_of(31), 1); // 1970-02-01
        assert_eq!(month_of(20_454), 56 * 12); // 2026-01-01
        assert_eq!(month_of(20_453), 55 * 12 + 11); // 2025-12-31
        assert_eq!(month_of(-1), -1); // 1969-12-31
    }
}
