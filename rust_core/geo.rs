//! Where an address is: an MMDB file (GeoLite2 or DB-IP, Country or City) read with the `maxminddb` crate. Only
//! the country's ISO code, the first subdivision's and the city's English names are read; the address itself is
//! never kept.

use maxminddb::{path, Reader};
use std::net::IpAddr;

/// Characters of a region or city name kept (the column widths).
pub const MAX_NAME: usize = 100;

/// A place as the database has it: the country (ISO 3166-1 alpha-2, upper case), and region and city if known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub country: Option<String>,
    pub region: Option<String>,
    pub city: Option<String>,
}

pub struct GeoDb {
    reader: Reader<Vec<u8>>,
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
        let reader = Reader::from_source(bytes)?;
        let kind = reader.metadata().database_type.to_ascii_lowercase();
        let cities = kind.contains("city");
        Ok(GeoDb { reader, cities })
    }

    /// The database's own name for its kind (`GeoLite2-City`, `DBIP-Country-Lite`, ...).
    pub fn kind(&self) -> &str {
        &self.reader.metadata().database_type
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
        let found = self.reader.lookup(Self::address(ip)?).ok()?;
        let code: Option<&str> = found.decode_path(&path!["country", "iso_code"]).ok().flatten();
        iso_code(code).or_else(|| {
            let registered: Option<&str> = found
                .decode_path(&path!["registered_country", "iso_code"])
                .ok()
                .flatten();
            iso_code(registered)
        })
    }

    /// The whole place of `ip`: region and city only from a City database.
    pub fn place(&self, ip: &str) -> Place {
        let Some(address) = Self::address(ip) else {
            return Place::default();
        };
        let Ok(found) = self.reader.lookup(address) else {
            return Place::default();
        };
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
}
