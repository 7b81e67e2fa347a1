//! Numbers and addresses as `bgpdump -m` writes them (ingest/normalize.py's forms).

pub(crate) fn push_u32(out: &mut Vec<u8>, mut v: u32) {
    let mut b = [0u8; 10];
    let mut i = 10;
    loop {
        i -= 1;
        b[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&b[i..]);
}

pub(crate) fn push_v4(out: &mut Vec<u8>, a: &[u8]) {
    for (i, x) in a[..4].iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_u32(out, *x as u32);
    }
}

pub(crate) fn push_hex(out: &mut Vec<u8>, v: u16) {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut started = false;
    for shift in [12, 8, 4, 0] {
        let d = ((v >> shift) & 0xf) as usize;
        if d != 0 || started || shift == 0 {
            out.push(H[d]);
            started = true;
        }
    }
}

/// RFC 5952 text (as Python's ipaddress writes it), with inet_ntop's embedded-IPv4 forms
/// (::a.b.c.d, ::ffff:a.b.c.d), which `bgpdump -m` keeps.
pub(crate) fn push_v6(out: &mut Vec<u8>, a: &[u8]) {
    let mut w = [0u16; 8];
    for i in 0..8 {
        w[i] = u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
    }
    let (mut best, mut best_len, mut cur, mut cur_len) = (usize::MAX, 0usize, usize::MAX, 0usize);
    for i in 0..8 {
        if w[i] == 0 {
            if cur == usize::MAX {
                cur = i;
                cur_len = 0;
            }
            cur_len += 1;
            if cur_len > best_len {
                best = cur;
                best_len = cur_len;
            }
        } else {
            cur = usize::MAX;
        }
    }
    if best_len < 2 {
        best = usize::MAX;
    }
    let mut i = 0;
    while i < 8 {
        if best != usize::MAX && i >= best && i < best + best_len {
            if i == best {
                out.push(b':');
            }
            i += 1;
            continue;
        }
        if i != 0 {
            out.push(b':');
        }
        if i == 6 && best == 0 && (best_len == 6 || (best_len == 5 && w[5] == 0xffff)) {
            push_v4(out, &a[12..16]);
            break;
        }
        push_hex(out, w[i]);
        i += 1;
    }
    if best != usize::MAX && best + best_len == 8 {
        out.push(b':');
    }
}

pub(crate) fn push_ip(out: &mut Vec<u8>, a: &[u8], v6: bool) {
    if v6 {
        push_v6(out, a)
    } else {
        push_v4(out, a)
    }
}

// ------------------------------------------------------------------ unit tests
// Each expected text is what `bgpdump -m` prints for the same bytes (Python's ipaddress gives
// the same for every address here but the embedded-IPv4 forms, which inet_ntop keeps).
#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    fn v6(s: &str) -> [u8; 16] {
        s.parse::<std::net::Ipv6Addr>().unwrap().octets()
    }

    #[test]
    fn numbers_in_decimal_without_leading_zeros() {
        assert_eq!(text(|o| push_u32(o, 0)), "0");
        assert_eq!(text(|o| push_u32(o, 7)), "7");
        assert_eq!(text(|o| push_u32(o, 65536)), "65536");
        assert_eq!(text(|o| push_u32(o, u32::MAX)), "4294967295"); // ten digits: the whole buffer
    }

    #[test]
    fn ipv4_dotted_quad() {
        assert_eq!(text(|o| push_v4(o, &[192, 0, 2, 1])), "192.0.2.1");
        assert_eq!(text(|o| push_v4(o, &[0, 0, 0, 0])), "0.0.0.0");
        assert_eq!(text(|o| push_ip(o, &[255, 255, 255, 255], false)), "255.255.255.255");
    }

    #[test]
    fn hex_groups_lower_case_without_leading_zeros() {
        assert_eq!(text(|o| push_hex(o, 0)), "0");
        assert_eq!(text(|o| push_hex(o, 0x0db8)), "db8");
        assert_eq!(text(|o| push_hex(o, 0xABCD)), "abcd");
        assert_eq!(text(|o| push_hex(o, 0x1000)), "1000");
    }

    #[test]
    fn ipv6_in_rfc_5952_form() {
        for (addr, want) in [
            ("2001:db8::1", "2001:db8::1"),
            ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("::", "::"),
            ("::1", "::1"),
            ("2001:db8::", "2001:db8::"),
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"), // one zero group is not shortened
            ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),         // the longest run of zeros
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),   // of two equal runs, the first
            ("fe80::1:2:3:4", "fe80::1:2:3:4"),
        ] {
            assert_eq!(text(|o| push_ip(o, &v6(addr), true)), want, "{addr}");
        }
    }

    #[test]
    fn ipv6_embedded_ipv4_as_inet_ntop_writes_it() {
        assert_eq!(text(|o| push_v6(o, &v6("::ffff:192.0.2.1"))), "::ffff:192.0.2.1");
        assert_eq!(text(|o| push_v6(o, &v6("::192.0.2.1"))), "::192.0.2.1");
        // not the two prefixes inet_ntop keeps: plain hex groups
        assert_eq!(text(|o| push_v6(o, &v6("64:ff9b::c000:201"))), "64:ff9b::c000:201");
    }
}
