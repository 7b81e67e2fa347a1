//! Reading and decompression: a thread reads the file once (hashing it) and hands out
//! 1 MiB chunks of the decompressed MRT stream.

use crate::error::{one_line, Error, R};
use crate::pbz2;
use crate::CHUNK;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::mpsc::SyncSender;

pub(crate) enum Chunk {
    Data(Vec<u8>),
    End { sha256: String, file_bytes: u64 },
    Fail(Error),
}

pub(crate) struct HashRead {
    pub(crate) inner: File,
    pub(crate) h: Sha256,
    pub(crate) n: u64,
}

impl Read for HashRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.h.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }
}

/// Fill `out` from `r` up to CHUNK bytes; returns false at end of input.
pub(crate) fn fill(r: &mut dyn Read, out: &mut Vec<u8>) -> io::Result<bool> {
    out.resize(CHUNK, 0);
    let mut have = 0;
    while have < CHUNK {
        match r.read(&mut out[have..]) {
            Ok(0) => {
                out.truncate(have);
                return Ok(false);
            }
            Ok(k) => have += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

pub(crate) fn read_file(path: &str, tx: &SyncSender<Chunk>, bz2_workers: usize) -> R<(String, u64)> {
    let mut skip = 0u64; // output bytes the parallel path already delivered
    if bz2_workers > 1 {
        let mut head = [0u8; 3];
        let is_bz2 = File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == b"BZh";
        if is_bz2 {
            let send = |v: Vec<u8>| tx.send(Chunk::Data(v)).is_ok();
            match pbz2::run(path, bz2_workers, &send) {
                pbz2::Outcome::Done { sha256, file_bytes } => return Ok((sha256, file_bytes)),
                pbz2::Outcome::Cancelled => return Err(Error::Internal("cancelled".into())),
                pbz2::Outcome::Fallback { bytes_out } => skip = bytes_out,
            }
        }
    }
    let f = File::open(path).map_err(|e| Error::Io(format!("cannot open: {e}")))?;
    let mut br = BufReader::with_capacity(CHUNK, HashRead { inner: f, h: Sha256::new(), n: 0 });
    let head: Vec<u8> = br.fill_buf().map_err(|e| Error::Io(format!("read error: {e}")))?.iter().take(4).copied().collect();
    let kind = if head.starts_with(b"BZh") {
        "bzip2"
    } else if head.starts_with(&[0x1f, 0x8b]) {
        "gzip"
    } else {
        "plain"
    };
    // After a parallel attempt stopped early, the first `skip` bytes were delivered already.
    let mut send = |mut v: Vec<u8>| {
        if skip > 0 {
            let k = skip.min(v.len() as u64) as usize;
            v.drain(..k);
            skip -= k as u64;
            if v.is_empty() {
                return Ok(());
            }
        }
        tx.send(Chunk::Data(v)).map_err(|_| Error::Internal("cancelled".into()))
    };
    if kind == "plain" {
        loop {
            let mut out = Vec::new();
            let more = fill(&mut br, &mut out).map_err(|e| Error::Io(format!("read error: {e}")))?;
            if !out.is_empty() {
                send(out)?;
            }
            if !more {
                break;
            }
        }
    } else {
        loop {
            // One compressed stream (bzip2) or member (gzip); the bufread decoders consume
            // exactly their stream, so what follows in `br` is the next one (or garbage).
            {
                let mut dec: Box<dyn Read + '_> = if kind == "bzip2" {
                    Box::new(bzip2::bufread::BzDecoder::new(&mut br))
                } else {
                    Box::new(flate2::bufread::GzDecoder::new(&mut br))
                };
                loop {
                    let mut out = Vec::new();
                    let more = fill(&mut *dec, &mut out).map_err(|e| {
                        if e.kind() == io::ErrorKind::UnexpectedEof {
                            Error::Compression(format!("truncated {kind} stream (download cut short?)"))
                        } else {
                            Error::Compression(format!("corrupt {kind} stream: {}", one_line(&e.to_string())))
                        }
                    })?;
                    if !out.is_empty() {
                        send(out)?;
                    }
                    if !more {
                        break;
                    }
                }
            }
            let rest = br.fill_buf().map_err(|e| Error::Io(format!("read error: {e}")))?;
            if rest.is_empty() {
                break;
            }
            if !rest.starts_with(&head[..2]) {
                return Err(Error::Compression(format!("trailing garbage after the {kind} stream")));
            }
        }
    }
    let hr = br.into_inner();
    Ok((format!("{:x}", hr.h.finalize()), hr.n))
}
