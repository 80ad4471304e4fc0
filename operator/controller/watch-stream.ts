/** Watch streaming: one watch request read as newline-delimited JSON events, with idle and header timeouts. */
import { apiErrorFrom } from './api-error.ts'
import { resourcePath } from './resources.ts'
import type { Transport } from './transport.ts'
import { METADATA_WATCH_ACCEPT, type KubeObject, type ResourceInfo, type WatchEvent, type WatchOptions } from './types.ts'

/**
 * Opens a watch: newline-delimited JSON events go to `onEvent` in order; `onDone` is called
 * exactly once, without an error when the server ended the stream or `stop()` was called, with
 * an {@link ApiError} for a non-200 answer, or an Error for a dropped or stalled connection.
 * An ERROR event is delivered to `onEvent` like any other (the stream ends after it).
 * @returns stop: ends the watch (idempotent)
 */
export function watchStream<T extends KubeObject = KubeObject>(transport: Transport, info: () => ResourceInfo, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, onDone: (err?: Error) => void): () => void {
  const q = new URLSearchParams({ watch: 'true' })
  if (opts.allowWatchBookmarks !== false) q.set('allowWatchBookmarks', 'true')
  if (opts.labelSelector) q.set('labelSelector', opts.labelSelector)
  if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector)
  if (opts.resourceVersion !== undefined) q.set('resourceVersion', opts.resourceVersion)
  if (opts.sendInitialEvents !== undefined) {
    q.set('sendInitialEvents', String(opts.sendInitialEvents))
    q.set('resourceVersionMatch', 'NotOlderThan')
  }
  if (opts.timeoutSeconds) q.set('timeoutSeconds', String(opts.timeoutSeconds))
  const idleMs = opts.idleTimeoutMs ?? (opts.timeoutSeconds ? (opts.timeoutSeconds + 30) * 1000 : undefined)
  let path: string
  try {
    path = resourcePath(info(), { namespace: opts.namespace })
  } catch (e) {
    queueMicrotask(() => onDone(e as Error))
    return () => {}
  }
  const controller = new AbortController()
  let finished = false
  let idleTimer: NodeJS.Timeout | undefined
  const finish = (err?: Error): void => {
    if (finished) return
    finished = true
    if (idleTimer) clearTimeout(idleTimer)
    onDone(err)
  }
  const stop = (): void => {
    if (finished) return
    controller.abort()
    finish()
  }
  transport.open({ method: 'GET', path, query: q, signal: controller.signal, ...(opts.metadataOnly ? { accept: METADATA_WATCH_ACCEPT } : {}) }, { ms: opts.headerTimeoutMs ?? transport.requestTimeoutMs, until: 'response' }).then(
    ({ res, abort }) => {
      if (finished) {
        abort()
        return
      }
      controller.signal.addEventListener('abort', abort, { once: true })
      if (res.statusCode !== 200) {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.once('end', () => {
          const ra = res.headers['retry-after']
          finish(apiErrorFrom(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), Array.isArray(ra) ? ra[0] : ra))
        })
        res.on('error', (e) => finish(e))
        return
      }
      const armIdle = (): void => {
        if (idleMs === undefined) return
        if (idleTimer) clearTimeout(idleTimer)
        idleTimer = setTimeout(() => {
          abort()
          finish(new Error(`watch ${path}: no data for ${idleMs} ms`))
        }, idleMs)
      }
      armIdle()
      // The text after the last complete line; a chunk is scanned from an offset, not re-sliced
      // after every line (a chunk of many events would be copied once per event).
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        armIdle()
        const text = buffer === '' ? chunk : buffer + chunk
        let start = 0
        let nl: number
        while (!finished && (nl = text.indexOf('\n', start)) >= 0) {
          const line = text.slice(start, nl).trim()
          start = nl + 1
          if (line === '') continue
          let event: WatchEvent<T>
          try {
            event = JSON.parse(line) as WatchEvent<T>
          } catch (e) {
            abort()
            finish(new Error(`watch ${path}: undecodable event: ${e instanceof Error ? e.message : String(e)}`))
            return
          }
          try {
            onEvent(event)
          } catch (e) {
            // A throwing handler must not become an uncaught exception inside the socket's callback.
            abort()
            finish(e instanceof Error ? e : new Error(String(e)))
            return
          }
        }
        buffer = start === 0 ? text : text.slice(start)
      })
      res.once('end', () => finish())
      res.on('error', (e) => finish(new Error(`watch ${path}: connection dropped: ${e.message}`)))
      res.once('close', () => {
        if (!res.complete) finish(new Error(`watch ${path}: connection dropped`))
      })
    },
    (err: unknown) => finish(err instanceof Error ? err : new Error(String(err))),
  )
  return stop
}
