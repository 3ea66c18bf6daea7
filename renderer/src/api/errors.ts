/** A rejected contract call; `issues` name config fields (validation on the host) when there are any. */
export class ApiCallError extends Error {
  constructor(
    message: string,
    readonly issues?: readonly { path: string; message: string }[],
  ) {
    super(message);
    this.name = 'ApiCallError';
  }
}

export function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // Electron wraps a rejected invoke as "Error invoking remote method 'api:x': Error: <message>".
  return text.replace(/^Error invoking remote method '[^']*': (?:\w*Error: )?/, '');
}
