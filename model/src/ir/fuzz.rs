//! The `ir_text` fuzz target's body, callable on stable (the corpus replay test).

/// Arbitrary bytes: the parser never panics, and whatever parses round-trips:
/// `parse(print(m)) == m` and printing is a normal form. Verification of a
/// parsed module must not panic either.
pub fn ir_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(m) = super::parse(text) else { return };
    let printed = super::print(&m);
    let reparsed = match super::parse(&printed) {
        Ok(r) => r,
        Err(e) => panic!("printed module does not parse: {e}\n{printed}"),
    };
    assert_eq!(reparsed, m, "round trip changed the module:\n{printed}");
    assert_eq!(super::print(&reparsed), printed, "printing is not a normal form");
    let _ = m.verify();
}
