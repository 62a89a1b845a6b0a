// Every area's processors, by area: what worker processes run (the API never loads this).
import os from 'node:os';
import { contentProcessors } from '../content/processors.js';
import { embeddingsProcessors, stopEmbeddings, warmUpEmbeddings } from '../embeddings/processors.js';
import type { QueueName } from '../config.js';
import type { Platform } from '../platform.js';
import { mailProcessors, warmUpMail } from '../mail/processors.js';
import type { ProcessorMap } from './processor.js';

const pong = async () => ({ worker: `${os.hostname()}:${process.pid}` });
const pingProcessors: ProcessorMap = { 'content.ping': pong, 'embeddings.ping': pong, 'mail.ping': pong };

/** Keyed by area: the boot check names the area's processors file when a job has none. */
export const processorMaps: Record<string, ProcessorMap> = {
  content: contentProcessors,
  embeddings: embeddingsProcessors,
  mail: mailProcessors,
  jobs: pingProcessors,
};

/** Work a worker does once at start for a queue it consumes, before taking jobs (loading, compiling). */
export const queueWarmUps: Partial<Record<QueueName, (p: Platform) => Promise<void>>> = {
  embeddings: warmUpEmbeddings,
  mail: warmUpMail,
};

/** What a worker undoes when it stops consuming a queue (after its jobs ended): readiness it announced. */
export const queueStops: Partial<Record<QueueName, (p: Platform) => Promise<void>>> = {
  embeddings: stopEmbeddings,
};
