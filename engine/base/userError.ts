/**
 * An error the user caused and can fix (a bad flag, field or file): its message names the field or file and the fix.
 * The CLI prints these without a stack trace.
 */
export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
