// HTTP routes of the Files and Batch APIs (OpenAI's shapes, so its clients work unchanged), under /v1 with an API key;
// errors in OpenAI's shape. Each endpoint is declared (src/http/route.ts): the key is checked before its handler runs.
import { z } from 'zod';
import { ApiRouter, endpoint, ok, openaiError } from '../http/route.js';
import type { Platform } from '../platform.js';
import * as s from './schema.js';
import * as service from './service.js';

const notFound = ok('no such file or batch of yours', openaiError);
const ids = { id: z.string().max(100) };

const uploadFile = endpoint(
  {
    method: 'post',
    path: '/v1/files',
    summary: "Upload a file (multipart: `file`, `purpose=batch`): a batch's input, JSONL, one request per line",
    auth: 'apiKey',
    body: 'multipart',
    responses: {
      200: ok('the file object', s.fileView),
      400: ok('no file part, or a purpose other than batch', openaiError),
      413: ok('larger than BATCH_MAX_FILE_BYTES', openaiError),
      429: ok('you keep too many files', openaiError),
    },
  },
  async (ctx, { p, principal }) => s.fileObject(await service.upload(p, principal, ctx.req)),
);

const listFiles = endpoint(
  {
    method: 'get',
    path: '/v1/files',
    summary: 'Your files, newest first (`after` a file id, `limit`, `order`, `purpose`)',
    auth: 'apiKey',
    query: s.filesQuery,
    responses: { 200: ok('a page of file objects', s.listOf(s.fileView)) },
  },
  (_ctx, { p, principal, query }) => service.listFiles(p, principal, query),
);

const getFile = endpoint(
  {
    method: 'get',
    path: '/v1/files/:id',
    summary: 'One of your files',
    auth: 'apiKey',
    pathParams: ids,
    responses: { 200: ok('the file object', s.fileView), 404: notFound },
  },
  async (_ctx, { p, principal, path }) => s.fileObject(await service.getFile(p, principal, path.id)),
);

const fileContent = endpoint(
  {
    method: 'get',
    path: '/v1/files/:id/content',
    summary: "A file's bytes (a batch's output: one line per request, as OpenAI writes them)",
    auth: 'apiKey',
    pathParams: ids,
    responses: { 200: 'the bytes (application/octet-stream)', 404: notFound },
  },
  async (ctx, { p, principal, path }) => {
    const { file, body } = await service.fileContent(p, principal, path.id);
    ctx.type = 'application/octet-stream';
    ctx.length = Number(file.bytes);
    ctx.set('Content-Disposition', `attachment; filename="${file.filename.replace(/[^\w.-]/g, '_')}"`);
    return body;
  },
);

const deleteFile = endpoint(
  {
    method: 'delete',
    path: '/v1/files/:id',
    summary: 'Delete one of your files',
    auth: 'apiKey',
    pathParams: ids,
    responses: { 200: ok('deleted', z.object({ id: z.string(), object: z.literal('file'), deleted: z.boolean() })), 404: notFound },
  },
  (_ctx, { p, principal, path }) => service.deleteFile(p, principal, path.id),
);

const createBatch = endpoint(
  {
    method: 'post',
    path: '/v1/batches',
    summary: "Create a batch from an uploaded file (`endpoint: /v1/embeddings`, `completion_window: 24h`); it validates, runs and ends as OpenAI's do",
    auth: 'apiKey',
    idempotent: true,
    body: s.createBatchBody,
    parseBody: s.parseCreateBatch,
    responses: {
      200: ok('the batch, validating', s.batchView),
      400: ok('a missing or wrong field', openaiError),
      404: ok('no such file of yours', openaiError),
    },
  },
  async (_ctx, { p, principal, body }) => s.batchObject(await service.createBatch(p, principal, body)),
);

const listBatches = endpoint(
  {
    method: 'get',
    path: '/v1/batches',
    summary: 'Your batches, newest first (`after` a batch id, `limit` 1-100)',
    auth: 'apiKey',
    query: s.batchesQuery,
    responses: { 200: ok('a page of batch objects', s.listOf(s.batchView)) },
  },
  (_ctx, { p, principal, query }) => service.listBatches(p, principal, query),
);

const getBatch = endpoint(
  {
    method: 'get',
    path: '/v1/batches/:id',
    summary: 'One of your batches: its status, request_counts and, once ended, output_file_id and error_file_id',
    auth: 'apiKey',
    pathParams: ids,
    responses: { 200: ok('the batch', s.batchView), 404: notFound },
  },
  async (_ctx, { p, principal, path }) => s.batchObject(await service.getBatch(p, principal, path.id)),
);

const cancelBatch = endpoint(
  {
    method: 'post',
    path: '/v1/batches/:id/cancel',
    summary: 'Cancel a batch: cancelling at once, then cancelled with what had completed in its output file',
    auth: 'apiKey',
    pathParams: ids,
    idempotent: true,
    responses: { 200: ok('the batch, cancelling', s.batchView), 404: notFound, 409: ok('the batch has ended', openaiError) },
  },
  async (_ctx, { p, principal, path }) => s.batchObject(await service.cancelBatch(p, principal, path.id)),
);

export function batchesRouter(p: Platform): ApiRouter {
  return new ApiRouter('Batches', p).add(uploadFile, listFiles, getFile, fileContent, deleteFile, createBatch, listBatches, getBatch, cancelBatch);
}
