/** The parts of a JSON Schema (draft 2020-12, as engine/runs/config/configJsonSchema.ts makes it) the launch form reads. */
export interface JsonSchemaNode {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  items?: JsonSchemaNode;
  oneOf?: JsonSchemaNode[];
  anyOf?: JsonSchemaNode[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  maxLength?: number;
}

export type FieldKind =
  | 'object'
  | 'union'
  | 'enum'
  | 'anyOf'
  | 'boolean'
  | 'number'
  | 'const'
  | 'text'
  | 'textarea'
  | 'list'
  | 'multi'
  | 'json';

export function kindOf(schema: JsonSchemaNode): FieldKind {
  if (schema.properties) return 'object';
  if (schema.oneOf && discriminatorOf(schema.oneOf)) return 'union';
  if (schema.enum) return 'enum';
  if (schema.anyOf) return 'anyOf';
  if (schema.const !== undefined) return 'const';
  switch (schema.type) {
    case 'boolean':
      return 'boolean';
    case 'integer':
    case 'number':
      return 'number';
    case 'string':
      return (schema.maxLength ?? 0) > 500 ? 'textarea' : 'text';
    case 'array':
      if (schema.items?.enum) return 'multi';
      if (schema.items?.type === 'string') return 'list';
      return 'json';
    default:
      return 'json';
  }
}

/** The property whose `const` tells the members of a oneOf apart (`algorithm`, `kind`), if there is one. */
export function discriminatorOf(members: readonly JsonSchemaNode[]): string | undefined {
  const first = members[0]?.properties;
  if (!first) return undefined;
  return Object.keys(first).find((key) => members.every((m) => m.properties?.[key]?.const !== undefined));
}

export function memberFor(members: readonly JsonSchemaNode[], key: string, value: unknown): JsonSchemaNode | undefined {
  return members.find((m) => m.properties?.[key]?.const === value);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function valueAt(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isRecord(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Sets (or, with undefined, removes) the value at `path`, creating objects on the way. */
export function setAt(root: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = root;
  for (const key of path.slice(0, -1)) {
    if (!isRecord(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
}
