// Loaded with `--import`: every module URL the process resolves through the ES module loader is appended to the file
// IMPORT_LOG names (tests read it to see what a process loaded).
import { register } from 'node:module';

register(new URL('./import-recorder-hooks.mjs', import.meta.url));
