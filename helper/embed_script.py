#!/usr/bin/env python3
"""Embeds the HTML pages' one inline script in a C++ header with its CSP hash ('sha256-<base64>' of the
exact bytes between <script> and </script>), so the page's Content-Security-Policy can pin that script
instead of allowing 'unsafe-inline', and the hash can never drift from the script: both come from one file
at build time."""
import base64
import hashlib
import sys

source, header = sys.argv[1], sys.argv[2]
with open(source, "rb") as f:
    script = f.read()
text = script.decode("ascii")  # the literal below is a raw string: keep the script plain ASCII
if ")js\"" in text or "</script" in text.lower():
    sys.exit(f"{source}: holds )js\" or </script, which would end the literal or the element")
digest = base64.b64encode(hashlib.sha256(script).digest()).decode("ascii")
with open(header, "w") as f:
    f.write(f"""// Generated from {source.split('/')[-1]} by helper/embed_script.py at build time: do not edit.
#pragma once

namespace stallscope::cli::svg {{

inline constexpr char kSortScript[] = R"js({text})js";
inline constexpr char kSortScriptCspHash[] = "sha256-{digest}";

}}  // namespace stallscope::cli::svg
""")
