//! The `rib_entries` columns being built: Arrow buffers, handed to Python whole.

#[derive(Default)]
pub(crate) struct Cols {
    pub(crate) n: usize,
    pub(crate) peer_asn: Vec<u32>,
    pub(crate) peer_ip_off: Vec<i32>,
    pub(crate) peer_ip: Vec<u8>,
    pub(crate) afi: Vec<i8>,
    pub(crate) prefix_off: Vec<i32>,
    pub(crate) prefix: Vec<u8>,
    pub(crate) path_off: Vec<i32>,
    pub(crate) path_vals: Vec<u32>,
    pub(crate) path_valid: Vec<u8>,
    pub(crate) has_set: Vec<u8>,
    pub(crate) raw_off: Vec<i32>,
    pub(crate) raw: Vec<u8>,
    pub(crate) origin: Vec<u32>,
    pub(crate) origin_valid: Vec<u8>,
}

impl Cols {
    pub(crate) fn new(cap: usize) -> Cols {
        let mut c = Cols {
            peer_asn: Vec::with_capacity(cap),
            afi: Vec::with_capacity(cap),
            path_vals: Vec::with_capacity(cap * 6),
            has_set: Vec::with_capacity(cap),
            origin: Vec::with_capacity(cap),
            origin_valid: Vec::with_capacity(cap),
            path_valid: Vec::with_capacity(cap),
            ..Default::default()
        };
        for v in [&mut c.peer_ip_off, &mut c.prefix_off, &mut c.path_off, &mut c.raw_off] {
            v.reserve(cap + 1);
            v.push(0);
        }
        c
    }
}

pub(crate) fn pack_bits(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; bytes.len().div_ceil(8)];
    for (i, b) in bytes.iter().enumerate() {
        if *b != 0 {
            out[i >> 3] |= 1 << (i & 7);
        }
    }
    out
}
