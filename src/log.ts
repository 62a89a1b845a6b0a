// The one JSON logger (pino); children carry request and job ids.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, name = 'switchyard'): Logger {
  return pino({
    name,
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Never log credentials, even by accident through a whole-object log.
    redact: {
      paths: ['password', '*.password', 'req.headers.authorization', 'req.headers.cookie', 'refresh_token', '*.refresh_token', 'key', '*.key'],
      censor: '[redacted]',
    },
  });
}
