/**
 * A recording proxy for tests: it stands in front of a server, hands each request's body to
 * `record`, and forwards the request unchanged — unless `record` returns a reply, which the proxy
 * sends instead (a scripted server answer, such as a 410 the real server would give).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/** An answer {@link recordingProxy} sends in place of the server's. */
export interface ProxyReply {
  status: number
  body: string
}

/**
 * Starts the proxy in front of `upstream` (closed when `t` ends); returns its URL. With
 * `authorization`, requests that carry none get it, as `kubectl proxy` adds its credentials
 * (kubectl itself sends none over plain HTTP).
 */
export async function recordingProxy(t: Test, upstream: string, record: (req: http.IncomingMessage, body: Buffer) => ProxyReply | void, authorization?: string): Promise<string> {
  const proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const reply = record(req, body)
      if (reply) {
        res.writeHead(reply.status, { 'Content-Type': 'application/json' })
        res.end(reply.body)
        return
      }
      const headers = authorization && !req.headers.authorization ? { ...req.headers, authorization } : req.headers
      const up = http.request(upstream + (req.url ?? '/'), { method: req.method, headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 500, upRes.headers)
        upRes.pipe(res)
        upRes.on('error', () => res.destroy())
      })
      // Either side closing (a watch cut, a test ending) ends the other.
      up.on('error', () => res.destroy())
      res.on('close', () => up.destroy())
      up.end(body)
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        proxy.close(() => r())
        // Open watches through the proxy would hold close() up.
        proxy.closeAllConnections()
      }),
  )
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
}
