"""``--set corpus=`` on documentation trees nobody here wrote (issue 45): libxslt's HTML
reference (Debian ``libxslt1-dev``: XHTML pages in ISO-8859-1 that open with an XML
declaration) and libffi's manual (texinfo HTML with C examples in ``<pre>``).

Before: every libxslt page and search snippet began ``xml version="1.0" encoding=...?``, its
Latin-1 text was decoded as UTF-8 (``Copyright \ufffd 2001``), C code gave number facts
(``ffi_prep_cif(&cif, FFI_DEFAULT_ABI, ___, ...)``), and a section task asked for the page
headed "libxslt", a word every page holds, which the expert could not find."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentworld.core.collect import collect
from agentworld.domains.search.corpus import Page
from agentworld.domains.search.domain import SearchDomain
from agentworld.domains.search.user_corpus import read_page
from agentworld.domains.search.user_tasks import number_facts, sections

XHTML = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD '
         'XHTML 1.0 Transitional//EN" "x.dtd">\n<html><head><title>Tutorial</title></head>'
         '<body><!-- layout --><h1>Tutorial</h1><p>Copyright \u00a9 2001 John Fleck.</p>'
         '</body></html>')
LIBXSLT = Path("/usr/share/doc/libxslt1-dev/html")


def test_an_xhtml_page_in_latin_1_reads_as_it_declares(tmp_path):
    path = tmp_path / "tutorial.html"
    path.write_bytes(XHTML.encode("iso-8859-1"))
    page = read_page("tutorial.html", path)
    assert page is not None and page.title == "Tutorial"
    assert page.text.startswith("# Tutorial"), page.text[:80]
    assert "Copyright \u00a9 2001" in page.text and "\ufffd" not in page.text
    assert "xml version" not in page.text and "DOCTYPE" not in page.text
    assert "layout" not in page.text


def test_code_gives_no_fact_and_a_word_on_every_page_no_section():
    code = ("```\nint main(void)\n{\n  ffi_cif cif;\n\n  /* Initialize the cif */ if "
            "(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 1, &ffi_type_sint, args) == FFI_OK) { s = 1 }"
            "\n\n  return 0;\n}\n```")
    pages = [Page("example.html", "Example", f"# Example\n\nThe call takes 3 arguments in "
                  f"this small example program.\n\n{code}\n\n## Building\n\nRun make.", "N/A",
                  "user")]
    pages += [Page(f"p{i}.html", f"P{i}", f"# P{i}\n\n## libfoo\n\nAbout libfoo page {i}."
                   if i == 0 else f"# P{i}\n\nlibfoo does things on page {i}.", "N/A", "user")
              for i in range(7)]
    facts = number_facts(pages)
    assert [f.number for f in facts if f.doc == "example.html"] == ["3"], facts
    found = {(p.url, h) for p, h in sections(pages)}
    assert ("example.html", "Building") in found
    assert not any(h == "libfoo" for _, h in found), found  # on all 7 pages' text


@pytest.mark.skipif(not LIBXSLT.is_dir(), reason="needs Debian's libxslt1-dev documentation "
                    "(apt-get install libxslt1-dev)")
def test_libxslt_reference_every_task_solved(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    episodes = collect(SearchDomain(), 12, policies={"scripted": 1}, seed=0,
                       env_options={"corpus": str(LIBXSLT)})
    assert all(e.steps[-1].reward == 1.0 for e in episodes), \
        [e.task.instruction[:90] for e in episodes if e.steps[-1].reward != 1.0]
    shown = [s.observation.text for e in episodes for s in e.steps]
    assert not any("xml version=" in text for text in shown)
    assert not any("\ufffd" in text for text in shown)
