/**
 * The chart's memory for memcached against what the real binary uses: a cache filled until it
 * evicts with the smallest items (the most items, the largest hash table), and with every
 * connection maxConnections allows open under TLS, stays within the rendered limit at its peak
 * (VmHWM). The request is the limit. Figures per size are in docs/values.md
 * (`npm run bench:memcached-memory`).
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { plain, stats, tls, type Conn } from './support/memcached-client.ts'
import { podOf, rss, running, startPod, type Memcached } from './support/memcached.ts'
import { makePki } from './support/pki.ts'

const chart = loadChart()
// Filling caches and opening 4,000 TLS connections takes tens of seconds on a busy machine.
t.setTimeout(300_000)
const render = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 1, ...spec } }).objects

/** The memcached container's memory request and limit, in KiB. */
function memoryOf(objects: ReturnType<typeof render>): { request: number; limit: number } {
  const c = podOf(objects).containers.find((x) => x.name === 'memcached') as unknown as { resources: { requests: Record<string, string>; limits: Record<string, string> } }
  const kib = (q: string | undefined) => {
    const m = /^(\d+)Mi$/.exec(q ?? '')
    if (!m) throw new Error(`not a quantity in Mi: ${q}`)
    return Number(m[1]) * 1024
  }
  return { request: kib(c.resources.requests.memory), limit: kib(c.resources.limits.memory) }
}

/** Sets 10-byte items until memcached evicts, then a fifth more; waits for the hash table to settle. */
async function fill(mc: Memcached): Promise<Record<string, string>> {
  const conn = await plain(mc.port)
  let i = 0
  for (;;) {
    let batch = ''
    for (let j = 0; j < 20_000; j++, i++) batch += `set k${String(i).padStart(9, '0')} 0 0 10 noreply\r\nxxxxxxxxxx\r\n`
    await conn.command(batch + 'version\r\n')
    const st = await stats(conn)
    if (Number(st.evictions) > 0 && i > Number(st.curr_items) * 1.2) break
  }
  let st = await stats(conn)
  for (let k = 0; k < 100 && st.hash_is_expanding !== '0'; k++) {
    await new Promise((r) => setTimeout(r, 100))
    st = await stats(conn)
  }
  conn.close()
  return st
}

t.test('memoryMB 128, full of small items: the peak stays within the limit, which is the request', async (t) => {
  const objects = render({ memoryMB: 128 })
  const memory = memoryOf(objects)
  t.equal(memory.request, memory.limit, 'request = limit: the pod cannot be evicted for using more than it asked')
  const mc = running(await startPod(objects))
  t.teardown(() => mc.stop())
  const st = await fill(mc)
  t.ok(Number(st.evictions) > 0, `full: ${st.curr_items} items, hash table ${Number(st.hash_bytes) >> 20} MiB`)
  const { peak } = rss(mc.pid)
  t.ok(peak <= memory.limit, `peak ${(peak / 1024).toFixed(1)} MiB within the limit ${memory.limit / 1024} MiB`)
})

t.test('memoryMB 64, maxConnections 4096 under TLS, full and every connection open: within the limit', async (t) => {
  const pki = makePki()
  const objects = render({ memoryMB: 64, maxConnections: 4096, tls: { enabled: true, secretName: 'mc-tls' } })
  const memory = memoryOf(objects)
  const mc = running(await startPod(objects, { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } }))
  t.teardown(() => mc.stop())
  // The fill goes over TLS too: -Z leaves no plaintext port.
  const first = await tls(mc.port)
  let i = 0
  for (;;) {
    let batch = ''
    for (let j = 0; j < 20_000; j++, i++) batch += `set k${String(i).padStart(9, '0')} 0 0 10 noreply\r\nxxxxxxxxxx\r\n`
    await first.command(batch + 'version\r\n')
    const st = await stats(first)
    if (Number(st.evictions) > 0 && i > Number(st.curr_items) * 1.2) break
  }
  const open: Conn[] = [first]
  t.teardown(() => open.forEach((c) => c.close()))
  // memcached keeps a few descriptors of -c for itself (listeners, pipes): 4096 minus those.
  while (open.length < 4000) {
    const batch = await Promise.all(Array.from({ length: 100 }, () => tls(mc.port)))
    await Promise.all(batch.map((c) => c.command('version\r\n')))
    open.push(...batch)
  }
  const st = await stats(first)
  t.ok(Number(st.curr_connections) >= 4000, `${st.curr_connections} connections open`)
  const { peak } = rss(mc.pid)
  t.ok(peak <= memory.limit, `peak ${(peak / 1024).toFixed(1)} MiB within the limit ${memory.limit / 1024} MiB`)
})
