//! Where an address is: an MMDB file (GeoLite2 or DB-IP, Country or City) read with the `maxminddb` crate. Only
//! the country's ISO code, the first subdivision's and the city's English names are read; the address itself is
//! never kept. A file is memory-mapped (`GeoDb::open`): every worker of a host then shares the file's pages in the
//! page cache instead of each holding its own copy (~100 MB for a City database).

use maxminddb::{path, LookupResult, Mmap, Reader};
use std::net::IpAddr;
use std::path::Path;

/// Characters of a region or city name kept (the column widths).
pub const MAX_NAME: usize = 100;

/// A place as the database has it: the country (ISO 3166-1 alpha-2, upper case), and region and city if known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub country: Option<String>,
    pub region: Option<String>,
    pub city: Option<String>,
}

/// The database's bytes: a file's memory map, or bytes of its own (tests, and `from_bytes`).
enum Source {
    Mapped(Reader<Mmap>),
    Owned(Reader<Vec<u8>>),
}

pub struct GeoDb {
    source: Source,
    cities: bool,
}

fn cut(name: Option<&str>) -> Option<String> {
    let name = name?.trim();
    (!name.is_empty()).then(|| name.chars().take(MAX_NAME).collect())
}

fn iso_code(code: Option<&str>) -> Option<String> {
    let code = code?;
    (code.len() == 2 && code.bytes().all(|b| b.is_ascii_alphabetic())).then(|| code.to_ascii_uppercase())
}

impl GeoDb {
    /// The database in `bytes` (a whole MMDB file).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, maxminddb::MaxMindDbError> {
        Ok(Self::made(Source::Owned(Reader::from_source(bytes)?)))
    }

    /// The database in the file at `path`, memory-mapped through the `maxminddb` crate (its `mmap` feature).
    ///
    /// The file must be replaced by a rename (as `geoipupdate` does), never rewritten in place, while it is open:
    /// the map reads the file's pages as they are, and a file truncated under it faults on the next lookup. The
    /// caller (`slugline.clicks.geo`) drops the database when it sees the same file changed in place.
    pub fn open(path: &Path) -> Result<Self, maxminddb::MaxMindDbError> {
        // SAFETY: the mapped file is only read; the caller's contract above (replace by rename) keeps it unchanged
        // for as long as this reader holds the map, and a rename leaves the mapped inode as it was.
        let reader = unsafe { Reader::open_mmap(path)? };
        Ok(Self::made(Source::Mapped(reader)))
    }

    fn made(source: Source) -> Self {
        let mut db = GeoDb { source, cities: false };
        db.cities = db.kind().to_ascii_lowercase().contains("city");
        db
    }

    /// Whether the database is a memory map of a file (rather than bytes of its own).
    pub fn is_mapped(&self) -> bool {
        matches!(self.source, Source::Mapped(_))
    }

    /// The database's own name for its kind (`GeoLite2-City`, `DBIP-Country-Lite`, ...).
    pub fn kind(&self) -> &str {
        match &self.source {
            Source::Mapped(reader) => &reader.metadata().database_type,
            Source::Owned(reader) => &reader.metadata().database_type,
        }
    }

    /// Whether the database says it holds cities.
    pub fn has_cities(&self) -> bool {
        self.cities
    }

    fn address(ip: &str) -> Option<IpAddr> {
        let ip = ip.trim();
        let ip = ip
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or(ip);
        let ip = ip.split('%').next().unwrap_or(ip); // an IPv6 zone names a local interface, not a place
        ip.parse().ok()
    }

    /// The country of `ip` (text, IPv4 or IPv6); None: not an address, or not in the database.
    pub fn country(&self, ip: &str) -> Option<String> {
        let address = Self::address(ip)?;
        match &self.source {
            Source::Mapped(reader) => country_of(reader.lookup(address).ok()?),
            Source::Owned(reader) => country_of(reader.lookup(address).ok()?),
        }
    }

    /// The whole place of `ip`: region and city only from a City database.
    pub fn place(&self, ip: &str) -> Place {
        let Some(address) = Self::address(ip) else {
            return Place::default();
        };
        match &self.source {
            Source::Mapped(reader) => reader.lookup(address).map(place_of).unwrap_or_default(),
            Source::Owned(reader) => reader.lookup(address).map(place_of).unwrap_or_default(),
        }
    }
}

fn country_of<S: AsRef<[u8]>>(found: LookupResult<'_, S>) -> Option<String> {
    let code: Option<&str> = found.decode_path(&path!["country", "iso_code"]).ok().flatten();
    iso_code(code).or_else(|| {
        let registered: Option<&str> = found
            .decode_path(&path!["registered_country", "iso_code"])
            .ok()
            .flatten();
        iso_code(registered)
    })
}

fn place_of<S: AsRef<[u8]>>(found: LookupResult<'_, S>) -> Place {
    let text = |path: &[maxminddb::PathElement<'_>]| -> Option<String> {
        let value: Option<&str> = found.decode_path(path).ok().flatten();
        cut(value)
    };
    let code: Option<&str> = found.decode_path(&path!["country", "iso_code"]).ok().flatten();
    let registered: Option<&str> = found
        .decode_path(&path!["registered_country", "iso_code"])
        .ok()
        .flatten();
    Place {
        country: iso_code(code).or_else(|| iso_code(registered)),
        region: text(&path!["subdivisions", 0, "names", "en"]),
        city: text(&path!["city", "names", "en"]),
    }
}
