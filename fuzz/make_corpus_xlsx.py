#!/usr/bin/env python3
"""Writes the seeds of fuzz/fuzz_xlsx.cpp into fuzz/corpus_xlsx/: a small
one-sheet workbook with every cell kind the reader takes (shared, rich,
inline, formula-string, boolean, number, missing; cells with and without
references), as a whole file stored and deflated (first byte even), and as
its XML parts joined by NUL bytes (first byte odd)."""
import io
import pathlib
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

SHEET = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="{MAIN}">'
    "<sheetData>"
    '<row r="1" spans="1:4"><c r="A1" t="s"><v>1</v></c><c r="B1" t="inlineStr"><is><t>n</t></is></c>'
    '<c r="C1" t="s"><v>2</v></c><c r="D1" t="s"><v>3</v></c></row>'
    '<row r="2"><c r="A2" t="s"><v>0</v></c><c r="B2"><v>1.5</v></c><c r="C2" t="b"><v>1</v></c>'
    '<c r="D2" t="str"><f>A2</f><v>x &amp;</v></c></row>'
    '<row r="3"><c t="s"><v>0</v></c><c/><c t="b"><v>0</v></c></row>'
    '<row r="4"/><row r="5"><c r="XFD5"><v>7</v></c></row>'
    "</sheetData></worksheet>"
)
SHARED = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<sst xmlns="{MAIN}" count="4" '
    'uniqueCount="4"><si><t>x &amp; &#x41;&#66;</t></si>'
    '<si><r><t>rich</t></r><r><t xml:space="preserve"> text</t></r></si>'
    "<si><t>flag</t></si><si><t/></si></sst>"
)
WORKBOOK = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<workbook xmlns="{MAIN}" '
    f'xmlns:r="{RELS}"><sheets><sheet name="s1" sheetId="1" r:id="rId1"/></sheets></workbook>'
)
WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships '
    'xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    f'<Relationship Id="rId1" Type="{RELS}/worksheet" Target="worksheets/sheet1.xml"/>'
    "</Relationships>"
)
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types '
    'xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/></Types>'
)


def workbook(method):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in [("[Content_Types].xml", CONTENT_TYPES), ("xl/workbook.xml", WORKBOOK),
                           ("xl/_rels/workbook.xml.rels", WORKBOOK_RELS),
                           ("xl/worksheets/sheet1.xml", SHEET), ("xl/sharedStrings.xml", SHARED)]:
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, text)
    return out.getvalue()


corpus = HERE / "corpus_xlsx"
corpus.mkdir(exist_ok=True)
(corpus / "stored.bin").write_bytes(b"\x00" + workbook(zipfile.ZIP_STORED))
(corpus / "deflated.bin").write_bytes(b"\x00" + workbook(zipfile.ZIP_DEFLATED))
(corpus / "parts.bin").write_bytes(
    b"\x01" + b"\x00".join(p.encode() for p in [SHEET, SHARED, WORKBOOK, WORKBOOK_RELS]))
