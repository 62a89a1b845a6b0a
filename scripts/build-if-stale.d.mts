// Types of build-if-stale.mjs, for the tests that import it.
export const PARTS: Record<'server' | 'console', { inputs: string[]; output: string; command: [string, string[]] }>;
export function fingerprint(root: string, inputs: string[]): string;
export function staleness(root: string, name: 'server' | 'console'): { print: string; stale: boolean };
export function markBuilt(root: string, name: 'server' | 'console', print: string): void;
export function transpileServer(root: string, outdir?: string): Promise<void>;
