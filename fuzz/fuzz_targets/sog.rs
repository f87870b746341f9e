#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = splat_io::fuzzing::run("sog", data);
});
