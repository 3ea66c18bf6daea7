/**
 * Where @huggingface/jinja 0.5.13 (the newest release) renders differently from Python's jinja2, corrected here so a
 * template renders as transformers renders it. Found by tests/unit/model/chatTemplatePeers.test.ts on Qwen3's template:
 *
 *   str.strip(chars), str.lstrip(chars), str.rstrip(chars) ignore `chars` and strip all whitespace. Qwen3 writes
 *   `content.lstrip('\n')` and `reasoning_content.strip('\n')`, so an assistant turn that begins with spaces lost them
 *   (Python keeps them). The corrected methods strip exactly the given characters; without an argument (or None) they
 *   strip whitespace as before.
 *
 * The library exports neither its StringValue nor its FunctionValue class; both are reached through a value the
 * interpreter returns, and StringValue's `builtins` getter is wrapped once. Should a later release fix this, the
 * wrapper still computes the same result; the peer test tells when the correction is no longer needed.
 */
import { Environment, Interpreter, Template } from '@huggingface/jinja';

interface RuntimeValue {
  value: unknown;
}
type Builtins = Map<string, RuntimeValue>;
type FunctionValueClass = new (fn: (args: RuntimeValue[]) => RuntimeValue) => RuntimeValue;

function stripper(which: 'both' | 'start' | 'end') {
  return (text: string, chars: unknown): string => {
    if (chars === undefined || chars === null) {
      return which === 'both' ? text.trim() : which === 'start' ? text.trimStart() : text.trimEnd();
    }
    const set = new Set(Array.from(typeof chars === 'string' ? chars : String(chars as number)));
    const points = Array.from(text);
    let start = 0;
    let end = points.length;
    if (which !== 'end') while (start < end && set.has(points[start]!)) start++;
    if (which !== 'start') while (end > start && set.has(points[end - 1]!)) end--;
    return points.slice(start, end).join('');
  };
}

let applied = false;

/** Applies the corrections (once per process). */
export function applyJinjaFixes(): void {
  if (applied) return;
  applied = true;
  const sample = new Interpreter(new Environment()).run(new Template('x').parsed) as unknown as object;
  const StringValue = sample.constructor as new (value: string) => RuntimeValue;
  const proto = StringValue.prototype as object;
  // The library's own getter, called below with each StringValue as `this`.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const getter = Object.getOwnPropertyDescriptor(proto, 'builtins')?.get;
  if (getter === undefined) throw new Error('@huggingface/jinja changed: StringValue has no builtins getter');
  const FunctionValue = (getter.call(sample) as Builtins).get('upper')!.constructor as FunctionValueClass;
  const methods = { strip: stripper('both'), lstrip: stripper('start'), rstrip: stripper('end') };
  const fixed = new WeakSet<Builtins>();
  Object.defineProperty(proto, 'builtins', {
    configurable: true,
    get(this: RuntimeValue) {
      const builtins = getter.call(this) as Builtins;
      if (!fixed.has(builtins)) {
        fixed.add(builtins);
        for (const [name, strip] of Object.entries(methods)) {
          builtins.set(name, new FunctionValue((args) => new StringValue(strip(String(this.value), args[0]?.value))));
        }
      }
      return builtins;
    },
  });
}
