//! Every WGSL file parses and validates with naga (no device needed), so a broken shader fails here even
//! on a machine without any Vulkan driver.

#[test]
fn every_shader_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/shaders");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("shader folder") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("read shader");
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&src)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&src)));
        seen += 1;
    }
    assert!(seen >= 1, "no shaders found in {}", dir.display());
}
