//! Compile-time behaviour of the macros: what must build, and what must fail with a message
//! that names the mistake and the fix.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
}
