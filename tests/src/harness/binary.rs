//! The `dsa` binary, for tests that run the real command (the operator CLI, `dsa serve` over
//! TLS, `dsa front`/`worker` processes to SIGKILL).
//!
//! Cargo hands a test the path of a binary (`CARGO_BIN_EXE_<name>`) only when the binary belongs
//! to the test's own package, and `dsa` belongs to dsa-api. So the harness asks Cargo to build it
//! once per test process — the same profile and target directory as the running test, a no-op
//! when it is up to date — and runs it from there. Building, rather than taking whatever
//! `target/debug/dsa` holds, is what keeps a test from running a stale binary after an edit to
//! `api/`, and makes a fresh clone work with a plain `cargo test`. A failed build fails the test,
//! loudly; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The path of an up-to-date `dsa` binary: `DSA_TEST_BIN` when set (a binary built elsewhere, used
/// as it is), else the one Cargo builds beside the running test executable
/// (`cargo build -p dsa-tests -p dsa-api --bin dsa` with the test's profile and target directory).
/// Built once per process; panics with Cargo's output when the build fails.
pub fn dsa_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("DSA_TEST_BIN") {
            let bin = PathBuf::from(bin);
            assert!(bin.is_file(), "DSA_TEST_BIN={} is not a file", bin.display());
            return bin;
        }
        build()
    })
    .clone()
}

/// Where the running executable's profile directory is (`target/[TRIPLE/]PROFILE`) and what
/// `cargo build` needs to write there: test and bench executables live in its `deps/`.
struct Layout {
    profile_dir: PathBuf,
    target_dir: PathBuf,
    triple: Option<String>,
    profile: String,
}

fn layout() -> Layout {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable has a directory");
    assert!(
        deps.file_name().is_some_and(|n| n == "deps"),
        "{} is not a Cargo-built test (expected target/PROFILE/deps/); set DSA_TEST_BIN to a dsa binary",
        exe.display()
    );
    let profile_dir = deps.parent().expect("target/PROFILE").to_path_buf();
    let profile = profile_dir.file_name().expect("profile directory name").to_string_lossy().into_owned();
    let above = profile_dir.parent().expect("the target directory");
    // `target/` holds Cargo's CACHEDIR.TAG; with `--target TRIPLE` the profile directory sits one
    // level deeper, in `target/TRIPLE/`.
    let (target_dir, triple) = if above.join("CACHEDIR.TAG").is_file() {
        (above.to_path_buf(), None)
    } else {
        let triple = above.file_name().map(|n| n.to_string_lossy().into_owned());
        (above.parent().expect("the target directory").to_path_buf(), triple)
    };
    Layout { profile_dir, target_dir, triple, profile }
}

fn build() -> PathBuf {
    let layout = layout();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    // `cargo test` runs tests with `CARGO` set to itself; the one that built this crate otherwise.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&layout.target_dir)
        // dsa-tests is selected too so that Cargo unifies the features of shared dependencies
        // as for `cargo test -p dsa-tests` or `--workspace`: then the build reuses the test's
        // compiled crates instead of building a second copy of them (tests/Cargo.toml says what
        // keeps it so).
        .args(["-p", "dsa-tests", "-p", "dsa-api", "--bin", "dsa"]);
    // `target/debug` is the dev profile (and `test`, which inherits it), `target/release` the
    // release profile (and `bench`); a custom profile has a directory of its own name.
    match layout.profile.as_str() {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    if let Some(triple) = &layout.triple {
        command.args(["--target", triple]);
    }
    // Cargo runs a test with the variables describing the test's own package set. Passed on,
    // they would differ from what the dependencies' builds saw (ring's build tracks
    // CARGO_MANIFEST_DIR), so Cargo would rebuild those here, and again in the next
    // `cargo test`: keep them out.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if describes_the_running_package(&name) {
            command.env_remove(name.as_ref());
        }
    }
    let output = command.output().unwrap_or_else(|e| panic!("cannot run cargo to build dsa: {e}"));
    assert!(
        output.status.success(),
        "building dsa for the tests failed ({command:?}):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bin = layout.profile_dir.join(format!("dsa{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "cargo built dsa but {} is missing", bin.display());
    bin
}

/// Whether `name` is one of the variables Cargo sets for the package of the running crate (as
/// opposed to Cargo's configuration, `CARGO_HOME`, `CARGO_PROFILE_…`, `CARGO_BUILD_…`, which the
/// build must see as the test's build saw it).
fn describes_the_running_package(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}
