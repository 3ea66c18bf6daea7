/** Types of appArchive.mjs (plain JavaScript, run by the packaging step). */
export declare const REQUIRED_APP_FILES: string[];
export declare function listAsarFiles(file: string): string[] | null;
export declare function missingAppFiles(asarFile: string): string[] | null;
