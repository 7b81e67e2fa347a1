//! Framing and decoding: every record checked as ingest/framing.py checks it, RIB entries
//! decoded into the columns.

use crate::cols::Cols;
use crate::error::{Error, Why, R};
use crate::text::{push_ip, push_u32};
use crate::{TABLE_DUMP, TABLE_DUMP_V2};
use std::collections::BTreeMap;


#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) records: u64,
    pub(crate) entries4: u64,
    pub(crate) entries6: u64,
    pub(crate) skipped: BTreeMap<String, u64>,
    pub(crate) first_timestamp: Option<u32>,
    pub(crate) uncompressed_bytes: u64,
}

pub(crate) struct Peer {
    pub(crate) asn: u32,
    pub(crate) ip: Vec<u8>, // text
}

#[derive(Clone, Copy)]
pub(crate) struct Seg {
    pub(crate) typ: u8,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

pub(crate) struct Decoder {
    pub(crate) peers: Option<Vec<Peer>>,
    pub(crate) cols: Cols,
    pub(crate) stats: Stats,
    pub(crate) batch_rows: usize,
    pub(crate) segs: Vec<Seg>,
    pub(crate) asns: Vec<u32>,
    pub(crate) segs4: Vec<Seg>,
    pub(crate) text: Vec<u8>,
}

pub(crate) fn be16(b: &[u8], i: usize) -> Option<u16> {
    b.get(i..i + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}
pub(crate) fn be32(b: &[u8], i: usize) -> Option<u32> {
    b.get(i..i + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

pub(crate) fn v2_rib(sub: u16) -> Option<(i8, bool)> {
    match sub {
        2 => Some((4, false)),
        4 => Some((6, false)),
        8 => Some((4, true)),
        10 => Some((6, true)),
        _ => None,
    }
}

pub(crate) fn v2_skipped(sub: u16) -> String {
    match sub {
        3 => "rib_ipv4_multicast".into(),
        5 => "rib_ipv6_multicast".into(),
        6 => "rib_generic".into(),
        9 => "rib_ipv4_multicast_addpath".into(),
        11 => "rib_ipv6_multicast_addpath".into(),
        12 => "rib_generic_addpath".into(),
        s => format!("table_dump_v2_subtype_{s}"),
    }
}

/// Parse AS path segments of `data` (ASNs of `w` bytes) onto `segs`/`asns`.
pub(crate) fn parse_segments(data: &[u8], w: usize, segs: &mut Vec<Seg>, asns: &mut Vec<u32>) -> Option<()> {
    let mut r = 0;
    while r < data.len() {
        let typ = *data.get(r)?;
        let cnt = *data.get(r + 1)? as usize;
        r += 2;
        if !(1..=4).contains(&typ) {
            return None;
        }
        let body = data.get(r..r + cnt * w)?;
        let start = asns.len();
        if w == 4 {
            asns.extend(body.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])));
        } else {
            asns.extend(body.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32));
        }
        segs.push(Seg { typ, start, len: cnt });
        r += cnt * w;
    }
    Some(())
}

/// bgpdump's hop count: sequences count their ASNs, sets count one.
pub(crate) fn hop_count(segs: &[Seg]) -> usize {
    segs.iter().map(|s| if s.typ == 1 || s.typ == 4 { 1 } else { s.len }).sum()
}

pub(crate) fn delim(typ: u8, start: bool) -> u8 {
    match (typ, start) {
        (1, true) => b'{',
        (1, false) => b'}',
        (4, true) => b'[',
        (4, false) => b']',
        (3, true) => b'(',
        (3, false) => b')',
        _ => b' ',
    }
}

/// The AS path text exactly as `bgpdump -m` prints it (its quirks included).
pub(crate) fn bgpdump_text(segs: &[Seg], asns: &[u32], out: &mut Vec<u8>) {
    out.clear();
    let mut space = false;
    let mut prev = 2u8;
    for s in segs {
        if prev != 2 {
            out.push(delim(prev, false));
        }
        if space {
            out.push(b' ');
        }
        if s.typ != 2 {
            out.push(delim(s.typ, true));
        }
        space = false;
        for a in &asns[s.start..s.start + s.len] {
            if space {
                out.push(if s.typ == 1 || s.typ == 4 { b',' } else { b' ' });
            } else {
                space = true;
            }
            push_u32(out, *a);
        }
        prev = s.typ;
    }
    if let Some(s) = segs.last() {
        if s.typ != 2 {
            out.push(delim(s.typ, false));
        }
    }
}

impl Decoder {
    pub(crate) fn new(batch_rows: usize) -> Decoder {
        Decoder {
            peers: None,
            cols: Cols::new(batch_rows),
            stats: Stats::default(),
            batch_rows,
            segs: Vec::new(),
            asns: Vec::new(),
            segs4: Vec::new(),
            text: Vec::new(),
        }
    }

    pub(crate) fn take_batch(&mut self) -> Cols {
        std::mem::replace(&mut self.cols, Cols::new(self.batch_rows))
    }

    pub(crate) fn record(&mut self, rtype: u16, sub: u16, body: &[u8]) -> R<()> {
        let recno = self.stats.records + 1;
        if rtype == TABLE_DUMP_V2 {
            if sub == 1 {
                self.peer_index(body).ok_or_else(|| Error::Mrt(format!("malformed PEER_INDEX_TABLE (record #{recno})")))?;
            } else if let Some((afi, addpath)) = v2_rib(sub) {
                if self.peers.is_none() {
                    return Err(Error::Mrt(format!("RIB record #{recno} comes before any PEER_INDEX_TABLE")));
                }
                self.rib_v2(body, afi, addpath).map_err(|why| Error::Mrt(format!("malformed RIB record #{recno} ({why})")))?;
            } else {
                *self.stats.skipped.entry(v2_skipped(sub)).or_default() += 1;
            }
        } else if rtype == TABLE_DUMP {
            if sub == 1 || sub == 2 {
                self.rib_v1(body, if sub == 1 { 4 } else { 6 })
                    .map_err(|why| Error::Mrt(format!("malformed RIB record #{recno} ({why})")))?;
            } else {
                *self.stats.skipped.entry(format!("table_dump_subtype_{sub}")).or_default() += 1;
            }
        } else {
            *self.stats.skipped.entry(format!("mrt_type_{rtype}")).or_default() += 1;
        }
        Ok(())
    }

    pub(crate) fn peer_index(&mut self, b: &[u8]) -> Option<()> {
        let name_len = be16(b, 4)? as usize;
        let mut p = 6 + name_len;
        let count = be16(b, p)? as usize;
        p += 2;
        let mut peers = Vec::with_capacity(count.min(b.len() / 9 + 1));
        for _ in 0..count {
            let typ = *b.get(p)?;
            p += 5; // type + BGP ID
            let v6 = typ & 1 != 0;
            let alen = if v6 { 16 } else { 4 };
            let addr = b.get(p..p + alen)?;
            p += alen;
            let asn = if typ & 2 != 0 {
                let a = be32(b, p)?;
                p += 4;
                a
            } else {
                let a = be16(b, p)? as u32;
                p += 2;
                a
            };
            let mut ip = Vec::with_capacity(40);
            push_ip(&mut ip, addr, v6);
            peers.push(Peer { asn, ip });
        }
        self.peers = Some(peers);
        Some(())
    }

    pub(crate) fn rib_v2(&mut self, b: &[u8], afi: i8, addpath: bool) -> Why<()> {
        let plen = *b.get(4).ok_or("too short")? as usize;
        let max = if afi == 4 { 32 } else { 128 };
        let nbytes = plen.div_ceil(8);
        let off = 5 + nbytes;
        if plen > max {
            return Err(format!("prefix length {plen}"));
        }
        let count = be16(b, off).ok_or("too short")? as u64;
        if afi == 4 {
            self.stats.entries4 += count;
        } else {
            self.stats.entries6 += count;
        }
        let mut addr = [0u8; 16];
        addr[..nbytes].copy_from_slice(&b[5..5 + nbytes]);
        let mut prefix = Vec::with_capacity(48);
        push_ip(&mut prefix, &addr, afi == 6);
        prefix.push(b'/');
        push_u32(&mut prefix, plen as u32);
        let peers = self.peers.take().unwrap_or_default();
        let r = self.entries_v2(b, afi, addpath, count, off + 2, &prefix, &peers);
        self.peers = Some(peers);
        r
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn entries_v2(&mut self, b: &[u8], afi: i8, addpath: bool, count: u64, mut p: usize, prefix: &[u8], peers: &[Peer]) -> Why<()> {
        for i in 0..count {
            let idx = be16(b, p).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))? as usize;
            p += 6 + if addpath { 4 } else { 0 };
            let alen = be16(b, p).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))? as usize;
            p += 2;
            let attrs = b.get(p..p + alen).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))?;
            p += alen;
            let peer = peers.get(idx).ok_or_else(|| format!("peer index {idx} not in the PEER_INDEX_TABLE"))?;
            self.push_entry(peer.asn, &peer.ip, afi, prefix, attrs, 4)?;
        }
        if p != b.len() {
            return Err(format!("{} bytes after its {count} entries", b.len() - p));
        }
        Ok(())
    }

    pub(crate) fn rib_v1(&mut self, b: &[u8], afi: i8) -> Why<()> {
        let alen = if afi == 4 { 4 } else { 16 };
        if afi == 4 {
            self.stats.entries4 += 1;
        } else {
            self.stats.entries6 += 1;
        }
        let short = || "too short".to_string();
        let addr = b.get(4..4 + alen).ok_or_else(short)?;
        let plen = *b.get(4 + alen).ok_or_else(short)? as usize;
        if plen > alen * 8 {
            return Err(format!("prefix length {plen}"));
        }
        let p = 4 + alen + 6;
        let peer_addr = b.get(p..p + alen).ok_or_else(short)?;
        let peer_asn = be16(b, p + alen).ok_or_else(short)? as u32;
        let attr_len = be16(b, p + alen + 2).ok_or_else(short)? as usize;
        let a0 = p + alen + 4;
        let attrs = b.get(a0..a0 + attr_len).ok_or_else(short)?;
        if a0 + attr_len != b.len() {
            return Err(format!("{} bytes after its entry", b.len() - a0 - attr_len));
        }
        let mut prefix = Vec::with_capacity(48);
        push_ip(&mut prefix, addr, afi == 6);
        prefix.push(b'/');
        push_u32(&mut prefix, plen as u32);
        let mut ip = Vec::with_capacity(40);
        push_ip(&mut ip, peer_addr, afi == 6);
        self.push_entry(peer_asn, &ip, afi, &prefix, attrs, 2)
    }

    /// One RIB entry: find AS_PATH (and AS4_PATH on 2-byte sessions) and append a row.
    pub(crate) fn push_entry(&mut self, peer_asn: u32, ip: &[u8], afi: i8, prefix: &[u8], attrs: &[u8], w: usize) -> Why<()> {
        let (mut aspath, mut as4): (Option<&[u8]>, Option<&[u8]>) = (None, None);
        let mut q = 0;
        while q < attrs.len() {
            let flags = attrs[q];
            let typ = *attrs.get(q + 1).ok_or("attribute header cut off")?;
            let (len, hl) = if flags & 0x10 != 0 {
                (be16(attrs, q + 2).ok_or("attribute header cut off")? as usize, 4)
            } else {
                (*attrs.get(q + 2).ok_or("attribute header cut off")? as usize, 3)
            };
            let data = attrs.get(q + hl..q + hl + len).ok_or("attribute runs past its entry")?;
            let slot = match typ {
                2 => &mut aspath,
                17 => &mut as4,
                _ => {
                    q += hl + len;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(format!("attribute {typ} twice"));
            }
            *slot = Some(data);
            q += hl + len;
        }
        self.segs.clear();
        self.asns.clear();
        if let Some(d) = aspath {
            parse_segments(d, w, &mut self.segs, &mut self.asns).ok_or("bad AS_PATH")?;
        }
        if let (Some(d), true, true) = (as4, w == 2, aspath.is_some()) {
            self.merge_as4(d)?;
        }
        let c = &mut self.cols;
        c.n += 1;
        c.peer_asn.push(peer_asn);
        c.peer_ip.extend_from_slice(ip);
        c.peer_ip_off.push(c.peer_ip.len() as i32);
        c.afi.push(afi);
        c.prefix.extend_from_slice(prefix);
        c.prefix_off.push(c.prefix.len() as i32);
        let plain = self.segs.iter().all(|s| s.typ == 2 && s.len > 0);
        if plain {
            // segment by segment: after an AS4_PATH merge, `asns` also holds the AS_TRANS
            // hops the merge replaced, which no segment refers to any more
            for sg in &self.segs {
                c.path_vals.extend_from_slice(&self.asns[sg.start..sg.start + sg.len]);
            }
            self.emit_plain();
            return Ok(());
        }
        bgpdump_text(&self.segs, &self.asns, &mut self.text);
        if self.text.iter().any(|b| matches!(b, b'{' | b'(' | b'[')) {
            let c = &mut self.cols;
            c.path_off.push(c.path_vals.len() as i32);
            c.path_valid.push(0);
            c.has_set.push(1);
            c.raw.extend_from_slice(&self.text);
            c.raw_off.push(c.raw.len() as i32);
            let last = self.text.split(|b| b.is_ascii_whitespace()).rfind(|t| !t.is_empty());
            match last.filter(|t| t.iter().all(u8::is_ascii_digit)).and_then(|t| std::str::from_utf8(t).ok()?.parse::<u32>().ok()) {
                Some(o) => {
                    c.origin.push(o);
                    c.origin_valid.push(1);
                }
                None => {
                    c.origin.push(0);
                    c.origin_valid.push(0);
                }
            }
            return Ok(());
        }
        // Only empty sequences make this text differ from the ASN list: read it as bgpdump's
        // text is read (tokens split on spaces).
        let text = std::mem::take(&mut self.text);
        for t in text.split(|b| *b == b' ').filter(|t| !t.is_empty()) {
            let v = std::str::from_utf8(t).ok().and_then(|s| s.parse::<u32>().ok()).ok_or("AS path text overflows")?;
            self.cols.path_vals.push(v);
        }
        self.text = text;
        self.emit_plain();
        Ok(())
    }

    /// Close a row whose path is the plain ASN list just appended (origin = last ASN).
    pub(crate) fn emit_plain(&mut self) {
        let c = &mut self.cols;
        let start = *c.path_off.last().unwrap() as usize;
        let end = c.path_vals.len();
        c.path_off.push(end as i32);
        c.path_valid.push(1);
        c.has_set.push(0);
        c.raw_off.push(c.raw.len() as i32);
        if end > start {
            c.origin.push(c.path_vals[end - 1]);
            c.origin_valid.push(1);
        } else {
            c.origin.push(0);
            c.origin_valid.push(0);
        }
    }

    /// RFC 6793 merge as bgpdump does it: keep AS_PATH's leading hops beyond AS4_PATH's count.
    pub(crate) fn merge_as4(&mut self, d: &[u8]) -> Why<()> {
        self.segs4.clear();
        let base = self.asns.len();
        let mut segs4 = std::mem::take(&mut self.segs4);
        parse_segments(d, 4, &mut segs4, &mut self.asns).ok_or("bad AS4_PATH")?;
        let (n_old, n_new) = (hop_count(&self.segs), hop_count(&segs4));
        if n_old < n_new {
            self.asns.truncate(base);
            self.segs4 = segs4;
            return Ok(());
        }
        let want = n_old - n_new;
        let mut merged = Vec::with_capacity(self.segs.len() + segs4.len());
        let mut have = 0;
        for s in &self.segs {
            if have >= want {
                break;
            }
            let mut s = *s;
            if s.typ == 1 || s.typ == 4 {
                have += 1;
            } else {
                have += s.len;
                if have > want {
                    s.len -= have - want;
                }
            }
            merged.push(s);
        }
        merged.extend_from_slice(&segs4);
        self.segs = merged;
        self.segs4 = segs4;
        Ok(())
    }
}

// ------------------------------------------------------------------ unit tests (`cargo test`, run by `make test` and `make check`)
// Hand-built records, each field written out as RFC 6396 / RFC 8050 / RFC 6793 lay it out,
// so a decoder change that breaks the wire format fails here before any real file is read.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Chunk;
    use crate::stream::{decode_stream, Done, Msg};
    use std::sync::mpsc::sync_channel;

    fn mrt(typ: u16, sub: u16, body: &[u8]) -> Vec<u8> {
        let mut out = 1_700_000_000u32.to_be_bytes().to_vec();
        out.extend(typ.to_be_bytes());
        out.extend(sub.to_be_bytes());
        out.extend((body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    /// PEER_INDEX_TABLE with one IPv4 peer (4-byte ASN).
    fn peer_index(ip: [u8; 4], asn: u32) -> Vec<u8> {
        let mut b = vec![192, 0, 2, 1, 0, 0, 0, 1]; // collector BGP ID, empty view name, 1 peer
        b.push(0b10); // IPv4 address, 4-byte ASN
        b.extend([10, 0, 0, 1]); // peer BGP ID
        b.extend(ip);
        b.extend(asn.to_be_bytes());
        b
    }

    fn attr(typ: u8, data: &[u8]) -> Vec<u8> {
        let mut a = vec![0x40, typ, data.len() as u8];
        a.extend_from_slice(data);
        a
    }

    fn segment(typ: u8, asns: &[u32], w: usize) -> Vec<u8> {
        let mut s = vec![typ, asns.len() as u8];
        for a in asns {
            s.extend_from_slice(&a.to_be_bytes()[4 - w..]);
        }
        s
    }

    /// RIB_IPV4_UNICAST(_ADDPATH) for 192.0.2.0/24 with one entry of peer 0.
    fn rib_v4(attrs: &[u8], addpath: bool) -> Vec<u8> {
        let mut b = vec![0, 0, 0, 7, 24, 192, 0, 2, 0, 1]; // sequence, /24, prefix, 1 entry
        b.extend([0, 0, 0x65, 0x5f, 0x10, 0]); // peer index 0, originated time
        if addpath {
            b.extend(42u32.to_be_bytes()); // path identifier (RFC 8050)
        }
        b.extend((attrs.len() as u16).to_be_bytes());
        b.extend_from_slice(attrs);
        b
    }

    fn decode(bytes: Vec<u8>) -> (R<Option<Done>>, Vec<Cols>) {
        let (ctx, crx) = sync_channel::<Chunk>(4);
        let (btx, brx) = sync_channel::<Msg>(64);
        ctx.send(Chunk::Data(bytes)).unwrap();
        ctx.send(Chunk::End { sha256: String::new(), file_bytes: 0 }).unwrap();
        let r = decode_stream(crx, &btx, 1000, None);
        drop(btx);
        let batches = brx.iter().filter_map(|m| if let Msg::Batch(c) = m { Some(c) } else { None }).collect();
        (r, batches)
    }

    fn paths(c: &Cols) -> Vec<Vec<u32>> {
        (0..c.n).map(|i| c.path_vals[c.path_off[i] as usize..c.path_off[i + 1] as usize].to_vec()).collect()
    }

    #[test]
    fn framing_a_record_cut_short_names_it() {
        let mut f = mrt(13, 1, &peer_index([198, 51, 100, 1], 65001));
        f.extend(&mrt(13, 2, &rib_v4(&attr(2, &segment(2, &[65001, 15169], 4)), false))[..20]);
        let (r, _) = decode(f);
        let e = r.err().unwrap();
        // the peer index record is 12 + 21 bytes; the RIB record's body is 31, of which 8 are there
        assert_eq!(e, Error::Mrt("MRT record #2 at byte 33 cut short: it announces 31 bytes, the file ends 8 bytes into them".into()));
    }

    #[test]
    fn framing_garbage_and_empty_input_are_not_mrt() {
        let (r, _) = decode(b"this is not an MRT file at all".to_vec());
        assert_eq!(r.err().unwrap().to_string(), "not an MRT record at byte 0 (type 8297, length 1852797984)"); // " i", "not "
        let (r, _) = decode(Vec::new());
        assert_eq!(r.err().unwrap(), Error::Mrt("no MRT records".into()));
    }

    #[test]
    fn a_rib_before_the_peer_index_is_an_error() {
        let (r, _) = decode(mrt(13, 2, &rib_v4(&attr(2, &segment(2, &[1, 2], 4)), false)));
        assert_eq!(r.err().unwrap().to_string(), "RIB record #1 comes before any PEER_INDEX_TABLE");
    }

    #[test]
    fn as_path_segments_in_bgpdump_text() {
        let mut data = segment(2, &[65001, 3356], 4);
        data.extend(segment(1, &[64512, 64513], 4)); // AS_SET
        let (mut segs, mut asns) = (Vec::new(), Vec::new());
        parse_segments(&data, 4, &mut segs, &mut asns).unwrap();
        assert_eq!(asns, vec![65001, 3356, 64512, 64513]);
        assert_eq!(hop_count(&segs), 3); // a set counts one
        let mut text = Vec::new();
        bgpdump_text(&segs, &asns, &mut text);
        assert_eq!(String::from_utf8(text.clone()).unwrap(), "65001 3356 {64512,64513}");
        let (mut segs, mut asns) = (Vec::new(), Vec::new());
        let mut confed = segment(3, &[65010, 65011], 2); // AS_CONFED_SEQUENCE, 2-byte ASNs
        confed.extend(segment(2, &[174], 2));
        parse_segments(&confed, 2, &mut segs, &mut asns).unwrap();
        bgpdump_text(&segs, &asns, &mut text);
        assert_eq!(String::from_utf8(text).unwrap(), "(65010 65011) 174");
        assert!(parse_segments(&[5, 1, 0, 0, 0, 1], 4, &mut segs, &mut asns).is_none()); // unknown type
        assert!(parse_segments(&[2, 3, 0, 0, 0, 1], 4, &mut segs, &mut asns).is_none()); // cut off
    }

    #[test]
    fn add_path_entries_skip_the_path_identifier() {
        let attrs = attr(2, &segment(2, &[65001, 15169], 4));
        for (sub, addpath) in [(2, false), (8, true)] {
            let mut f = mrt(13, 1, &peer_index([198, 51, 100, 1], 65001));
            f.extend(mrt(13, sub, &rib_v4(&attrs, addpath)));
            let (r, batches) = decode(f);
            let done = r.unwrap().unwrap();
            assert_eq!((done.stats.records, done.stats.entries4), (2, 1));
            assert_eq!(paths(&batches[0]), vec![vec![65001, 15169]], "subtype {sub}");
            assert_eq!(&batches[0].prefix[..], b"192.0.2.0/24");
        }
        // the same ADD-PATH record read as a plain one misreads its entry: an error, not a row
        let mut f = mrt(13, 1, &peer_index([198, 51, 100, 1], 65001));
        f.extend(mrt(13, 2, &rib_v4(&attrs, true)));
        let (r, _) = decode(f);
        assert!(r.err().unwrap().to_string().starts_with("malformed RIB record #2 ("));
    }

    /// TABLE_DUMP (v1) IPv4 entry of a 2-byte session: AS_PATH with AS_TRANS, and AS4_PATH.
    fn rib_v1(attrs: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, 0, 1, 192, 0, 2, 0, 24, 1, 0x65, 0x5f, 0x10, 0]; // view, seq, prefix, /24, status, time
        b.extend([198, 51, 100, 1, 0xfd, 0xe9]); // peer address, peer AS 65001
        b.extend((attrs.len() as u16).to_be_bytes());
        b.extend_from_slice(attrs);
        b
    }

    #[test]
    fn as4_path_replaces_the_as_trans_hops() {
        let mut attrs = attr(2, &segment(2, &[65001, 23456, 23456], 2));
        attrs.extend(attr(17, &segment(2, &[196608, 4200000001], 4)));
        let (r, batches) = decode(mrt(12, 1, &rib_v1(&attrs)));
        r.unwrap().unwrap();
        assert_eq!(paths(&batches[0]), vec![vec![65001, 196608, 4200000001]]);
        // an AS4_PATH longer than the AS_PATH is ignored (RFC 6793 4.2.3)
        let mut attrs = attr(2, &segment(2, &[65001], 2));
        attrs.extend(attr(17, &segment(2, &[196608, 4200000001], 4)));
        let (r, batches) = decode(mrt(12, 1, &rib_v1(&attrs)));
        r.unwrap().unwrap();
        assert_eq!(paths(&batches[0]), vec![vec![65001]]);
        // an attribute twice is malformed
        let mut attrs = attr(2, &segment(2, &[65001], 2));
        attrs.extend(attr(2, &segment(2, &[65002], 2)));
        let (r, _) = decode(mrt(12, 1, &rib_v1(&attrs)));
        assert_eq!(r.err().unwrap().to_string(), "malformed RIB record #1 (attribute 2 twice)");
    }
}
