// SPDX-License-Identifier: GPL-2.0
//! Generates the libibverbs/librdmacm FFI with bindgen from the installed headers
//! (Debian: libibverbs-dev, librdmacm-dev) and compiles the C shim for the
//! `static inline` verbs. Nothing is fetched or vendored.

use std::env;
use std::path::PathBuf;

fn main() {
    // The version the server reports: the package's, and after a `+` (SemVer build
    // metadata) the build tag a packager or a test build sets in RSWAP_BUILD_TAG.
    println!("cargo:rerun-if-env-changed=RSWAP_BUILD_TAG");
    let mut version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    if let Some(tag) = env::var("RSWAP_BUILD_TAG").ok().filter(|t| !t.is_empty()) {
        version = format!("{version}+{tag}");
    }
    println!("cargo:rustc-env=RSWAP_SERVER_VERSION={version}");

    println!("cargo:rerun-if-changed=csrc/shim.h");
    println!("cargo:rerun-if-changed=csrc/shim.c");

    cc::Build::new()
        .file("csrc/shim.c")
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-Werror")
        .compile("rswap_shim");
    println!("cargo:rustc-link-lib=dylib=rdmacm");
    println!("cargo:rustc-link-lib=dylib=ibverbs");

    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bindings = bindgen::Builder::default()
        .header("csrc/shim.h")
        .allowlist_function("rswap_.*")
        .allowlist_function("rdma_(create|destroy)_event_channel")
        .allowlist_function("rdma_(create|destroy)_id")
        .allowlist_function("rdma_(get|ack)_cm_event")
        .allowlist_function("rdma_(listen|reject|disconnect|destroy_qp|resolve_route)")
        .allowlist_function("rdma_(get|free)_devices")
        .allowlist_function("rdma_event_str")
        .allowlist_function("ibv_(alloc|dealloc)_pd")
        .allowlist_function("ibv_(create|destroy)_cq")
        .allowlist_function("ibv_dereg_mr")
        .allowlist_type("rdma_cm_event_type")
        .allowlist_type("rdma_port_space")
        .allowlist_type("ibv_access_flags")
        .allowlist_type("ibv_wc_status")
        .allowlist_var("RDMA_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .layout_tests(false)
        .derive_default(true)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("bindgen failed on csrc/shim.h: are libibverbs-dev, librdmacm-dev and libclang-dev installed?");
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("could not write bindings.rs");
}
