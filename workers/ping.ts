// The ping processor of every queue: does nothing but say which worker ran it.
import os from 'node:os';
import type { ProcessorMap } from './index.js';

const pong = async () => ({ worker: `${os.hostname()}:${process.pid}` });

export const pingProcessors: ProcessorMap = { 'content.ping': pong, 'embeddings.ping': pong, 'mail.ping': pong };
