"""Machine-readable report formats for CI: SARIF 2.1.0 (code scanning) and GitHub Actions
workflow commands. Each is a pure function of a finished `Report`."""
