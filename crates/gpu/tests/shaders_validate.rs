//! Every shader source, as compiled (preludes prepended), parses and validates with naga (no device
//! needed), so a broken shader fails here even on a machine without a Vulkan driver; and every `.wgsl`
//! file in `src/shaders/` is compiled somewhere.

#[test]
fn every_shader_validates() {
    for (name, src) in splat_gpu::shaders::ALL {
        let module = naga::front::wgsl::parse_str(src)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    }
}

#[test]
fn every_shader_file_is_compiled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/shaders");
    for entry in std::fs::read_dir(&dir).expect("shader folder") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.ends_with(".wgsl") || name.starts_with("common_") {
            continue;
        }
        assert!(
            splat_gpu::shaders::ALL.iter().any(|(n, _)| *n == name),
            "{name} is not in splat_gpu::shaders::ALL"
        );
    }
}
