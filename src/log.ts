// The one logger (pino): JSON lines, or pretty lines for a person at a terminal; children carry request and job ids.
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** LOG_FORMAT: `json` lines, `pretty` lines, or `auto` (pretty when stdout is a terminal, JSON otherwise). */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** Whether a logger of this format writes pretty lines here. */
export const prettyLogs = (format: LogFormat, stdout: { isTTY?: boolean } = process.stdout) => format === 'pretty' || (format === 'auto' && !!stdout.isTTY);

/**
 * Pretty lines: time, level, the process's name, `req <id>` and `job <id>` ahead of the message, the other fields
 * below it. Written synchronously, as JSON lines are: a line logged just before the process exits is not lost.
 */
const prettyStream = (fd: number) =>
  pretty({
    destination: fd,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,reqId,jobId',
    messageFormat: '{if reqId}req {reqId} {end}{if jobId}job {jobId} {end}{msg}',
  });

/** A logger writing to `fd`: standard output (1) for the processes, standard error (2) for the CLI, whose output is its answer. */
export function createLogger(level: string, name = 'switchyard', format: LogFormat = 'json', fd = 1): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Never log credentials, even by accident through a whole-object log.
      redact: {
        paths: ['password', '*.password', 'req.headers.authorization', 'req.headers.cookie', 'refresh_token', '*.refresh_token', 'key', '*.key'],
        censor: '[redacted]',
      },
    },
    prettyLogs(format, fd === 2 ? process.stderr : process.stdout) ? prettyStream(fd) : fd === 1 ? undefined : pino.destination({ fd, sync: true }),
  );
}
