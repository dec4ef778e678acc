//! Stripes written by hand, put together by `join`, and what `join` refuses.

use super::*;

/// A file of `size` bytes cut in buffers of `bs`, dealt to `parts` stripes in `dir` (buffer i
/// to stripe i % parts + 1, written in reverse order to show that the order of a stripe does
/// not matter); returns the file and the manifests' paths.
fn striped(dir: &Path, size: usize, bs: u32, parts: u16) -> (Vec<u8>, Vec<PathBuf>) {
    let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    let nbuf = buffers_in(size as u64, bs) as u32;
    let mut paths = Vec::new();
    for part in 1..=parts {
        let stripe = Stripe {
            transfer: 0xabc,
            part,
            parts,
        };
        let mut log = StripeLog::new(&stripe, "f.bin", size as u64, bs);
        let mut bytes = Vec::new();
        for i in (0..nbuf)
            .rev()
            .filter(|i| i % parts as u32 + 1 == part as u32)
        {
            let off = i as usize * bs as usize;
            let chunk = &data[off..(off + bs as usize).min(size)];
            let at = log.place(i, chunk.len() as u32, Vec::new());
            assert_eq!(at, bytes.len() as u64);
            bytes.extend_from_slice(chunk);
            log.written(i, blake3::hash(chunk).as_bytes());
        }
        let p = dir.join(stripe_name("f.bin", &stripe));
        std::fs::write(&p, &bytes).unwrap();
        let m = manifest_path(&p);
        std::fs::write(&m, log.manifest.to_json()).unwrap();
        paths.push(m);
    }
    (data, paths)
}

#[test]
fn stripes_join_into_the_file_in_order_whatever_their_order() {
    let d = tempfile::tempdir().unwrap();
    let (data, paths) = striped(d.path(), 10_000, 1000, 3);
    assert_eq!(find_manifests(&d.path().join("f.bin")).unwrap(), paths);
    let out = d.path().join("f.bin");
    let j = join(&paths, &out).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), data);
    assert_eq!((j.parts, j.buffers, j.size), (3, 10, 10_000));
    assert!(j.gaps.is_empty());
}

#[test]
fn a_missing_stripe_a_damaged_buffer_and_a_stranger_are_refused_and_nothing_is_written() {
    let d = tempfile::tempdir().unwrap();
    let (_, paths) = striped(d.path(), 10_000, 1000, 3);
    let out = d.path().join("f.bin");
    let e = join(&paths[..2], &out).unwrap_err().to_string();
    assert!(
        e.contains("stripe(s) 3 of 3") && e.contains("missing"),
        "{e}"
    );
    // A byte of stripe 2 flipped on its disk.
    let data2 = paths[1].with_extension("");
    let mut b = std::fs::read(&data2).unwrap();
    b[1500] ^= 1;
    std::fs::write(&data2, &b).unwrap();
    let e = join(&paths, &out).unwrap_err();
    assert!(matches!(e, StripeError::Damaged { index: 4, .. }), "{e}");
    b[1500] ^= 1;
    std::fs::write(&data2, &b).unwrap();
    // A stripe of another transfer.
    let mut m: Manifest = serde_json::from_slice(&std::fs::read(&paths[2]).unwrap()).unwrap();
    m.transfer = "0000000000000def".into();
    std::fs::write(&paths[2], m.to_json()).unwrap();
    let e = join(&paths, &out).unwrap_err().to_string();
    assert!(e.contains("in transfer 0000000000000def"), "{e}");
    assert!(!out.exists(), "nothing under the final name");
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 6, "no temporary left behind: {left:?}");
}

#[test]
fn a_buffer_in_two_stripes_or_in_none_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let (_, paths) = striped(d.path(), 4000, 1000, 2);
    let mut m: Manifest = serde_json::from_slice(&std::fs::read(&paths[1]).unwrap()).unwrap();
    let taken = m.buffers.pop().unwrap();
    std::fs::write(&paths[1], m.to_json()).unwrap();
    let e = join(&paths, &d.path().join("f.bin"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("buffer {}", taken.index)) && e.contains("in no stripe"),
        "{e}"
    );
    m.buffers.push(taken);
    m.buffers[0].index = 0;
    std::fs::write(&paths[1], m.to_json()).unwrap();
    let e = join(&paths, &d.path().join("f.bin"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("buffer 0 is in stripes 1 and 2"), "{e}");
}

#[test]
fn gaps_come_out_as_file_ranges() {
    let d = tempfile::tempdir().unwrap();
    let (_, paths) = striped(d.path(), 3000, 1000, 1);
    let mut m: Manifest = serde_json::from_slice(&std::fs::read(&paths[0]).unwrap()).unwrap();
    let b = m.buffers.iter_mut().find(|b| b.index == 1).unwrap();
    b.gaps = vec![(100, 300), (900, 1000)];
    std::fs::write(&paths[0], m.to_json()).unwrap();
    let j = join(&paths, &d.path().join("f.bin")).unwrap();
    assert_eq!(j.gaps, vec![(1100, 200), (1900, 100)]);
}

#[test]
fn manifests_that_say_something_impossible_are_refused() {
    let s = Stripe {
        transfer: 1,
        part: 1,
        parts: 2,
    };
    let mut log = StripeLog::new(&s, "f", 2500, 1000);
    log.place(0, 1000, Vec::new());
    log.written(0, &[0; 32]);
    let good = log.manifest.clone();
    assert!(Manifest::parse(good.to_json().as_bytes(), "m").is_ok());
    type Spoil = Box<dyn Fn(&mut Manifest)>;
    let cases: Vec<(&str, Spoil)> = vec![
        ("format", Box::new(|m| m.format = "v0".into())),
        ("part", Box::new(|m| m.part = 3)),
        ("part", Box::new(|m| m.parts = 0)),
        ("transfer", Box::new(|m| m.transfer = "xyz".into())),
        ("buffer size 0", Box::new(|m| m.buffer_size = 0)),
        (
            "of a file of 3 buffers",
            Box::new(|m| m.buffers[0].index = 3),
        ),
        ("the file's is 1000", Box::new(|m| m.buffers[0].len = 999)),
        ("gap", Box::new(|m| m.buffers[0].gaps = vec![(5, 1001)])),
        ("BLAKE3", Box::new(|m| m.buffers[0].blake3 = "00".into())),
        (
            "overlap",
            Box::new(|m| {
                let mut b = m.buffers[0].clone();
                b.index = 2;
                b.len = 500;
                b.at = 999;
                m.buffers.push(b);
            }),
        ),
    ];
    for (want, spoil) in cases {
        let mut m = good.clone();
        spoil(&mut m);
        let e = Manifest::parse(m.to_json().as_bytes(), "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{want}: {e}");
    }
    for junk in [&b""[..], b"{", b"[]", b"{\"format\": 5}", &[0xff; 40]] {
        assert!(Manifest::parse(junk, "m").is_err());
    }
}
