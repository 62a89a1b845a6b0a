// The resolve hook of import-recorder.mjs (module hooks run on a thread of their own).
import fs from 'node:fs';

const file = process.env.IMPORT_LOG;

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (file) fs.appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
