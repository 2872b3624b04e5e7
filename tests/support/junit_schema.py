"""The published JUnit schema reports are checked against: Jenkins xUnit plugin's junit-10.xsd (MIT; its source in
junit-10.xsd.SOURCE), read by xmlschema. Never a schema written here."""

from __future__ import annotations

from pathlib import Path

import xmlschema

JUNIT_XSD = xmlschema.XMLSchema(Path(__file__).parent / "junit-10.xsd")
