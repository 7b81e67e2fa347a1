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
    /// each row's VP bucket, once grouped (`by_bucket`); empty before
    pub(crate) bucket: Vec<i8>,
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

impl Cols {
    /// The rows grouped by VP bucket (common/vp_hash.py: the top `bucket_bits` bits of
    /// `peer_asn * mult mod 2^32`), in their order inside each bucket, with each row's bucket
    /// (`bucket`), and where each bucket's rows start (`buckets + 1` offsets): ingest writes
    /// each bucket's rows as row groups of their own, so a merge in bucket ranges reads only
    /// its range's (no second pass over the month).
    pub(crate) fn by_bucket(mut self, mult: u64, bucket_bits: u32) -> (Cols, Vec<i64>) {
        let nb = 1usize << bucket_bits;
        let b: Vec<u8> = self.peer_asn.iter()
            .map(|&a| (((a as u64).wrapping_mul(mult) & 0xffff_ffff) >> (32 - bucket_bits)) as u8).collect();
        let mut start = vec![0i64; nb + 1];
        for &x in &b {
            start[x as usize + 1] += 1;
        }
        for i in 0..nb {
            start[i + 1] += start[i];
        }
        if b.windows(2).all(|w| w[0] <= w[1]) {  // already grouped (one session's dump, say)
            self.bucket = b.iter().map(|&x| x as i8).collect();
            return (self, start);
        }
        let mut order = vec![0u32; self.n];
        let mut next = start.clone();
        for (i, &x) in b.iter().enumerate() {
            order[next[x as usize] as usize] = i as u32;
            next[x as usize] += 1;
        }
        // column by column: fixed widths gathered, variable ones through their new offsets
        fn gather<T: Copy>(v: &[T], order: &[u32]) -> Vec<T> {
            order.iter().map(|&i| v[i as usize]).collect()
        }
        fn gather_var<T: Copy>(off: &[i32], data: &[T], order: &[u32]) -> (Vec<i32>, Vec<T>) {
            let mut o = Vec::with_capacity(order.len() + 1);
            let mut d = Vec::with_capacity(data.len());
            o.push(0);
            for &i in order {
                d.extend_from_slice(&data[off[i as usize] as usize..off[i as usize + 1] as usize]);
                o.push(d.len() as i32);
            }
            (o, d)
        }
        let mut c = Cols { n: self.n, ..Default::default() };
        c.peer_asn = gather(&self.peer_asn, &order);
        (c.peer_ip_off, c.peer_ip) = gather_var(&self.peer_ip_off, &self.peer_ip, &order);
        c.afi = gather(&self.afi, &order);
        (c.prefix_off, c.prefix) = gather_var(&self.prefix_off, &self.prefix, &order);
        (c.path_off, c.path_vals) = gather_var(&self.path_off, &self.path_vals, &order);
        c.path_valid = gather(&self.path_valid, &order);
        c.has_set = gather(&self.has_set, &order);
        (c.raw_off, c.raw) = gather_var(&self.raw_off, &self.raw, &order);
        c.origin = gather(&self.origin, &order);
        c.origin_valid = gather(&self.origin_valid, &order);
        c.bucket = order.iter().map(|&i| b[i as usize] as i8).collect();
        (c, start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_grouped_by_bucket_keep_their_order_inside_each() {
        let mut c = Cols::new(4);
        for (asn, ip) in [(1u32, "a"), (2, "bb"), (1, "c"), (3, "")] {
            c.n += 1;
            c.peer_asn.push(asn);
            c.peer_ip.extend_from_slice(ip.as_bytes());
            c.peer_ip_off.push(c.peer_ip.len() as i32);
            c.afi.push(4);
            c.prefix_off.push(0);
            c.path_vals.push(asn);
            c.path_off.push(c.path_vals.len() as i32);
            c.path_valid.push(1);
            c.has_set.push(0);
            c.raw_off.push(0);
            c.origin.push(asn);
            c.origin_valid.push(1);
        }
        // buckets of 1, 2, 3 under mult 2654435761 and 5 bits: 19, 7, 27
        let (g, start) = c.by_bucket(2654435761, 5);
        let b = g.bucket.clone();
        assert_eq!(g.peer_asn, vec![2, 1, 1, 3]);
        assert_eq!(g.peer_ip, b"bbac".to_vec());
        assert_eq!(g.peer_ip_off, vec![0, 2, 3, 4, 4]);
        assert_eq!(g.path_vals, vec![2, 1, 1, 3]);
        assert_eq!(b, vec![7, 19, 19, 27]);
        assert_eq!((start[7], start[8], start[19], start[20], start[27], start[28], start[32]), (0, 1, 1, 3, 3, 4, 4));
    }
}
