/**
 * The chart's extstore against the real memcached (when the binary is built with it, as the
 * official image and Debian's are): the rendered ext_path on the emptyDir, values that leave memory
 * written to the file and read back from it, and the process within the rendered memory limit.
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { plain, stats } from './support/memcached-client.ts'
import { hasExtstore, podOf, rss, running, startPod } from './support/memcached.ts'

const chart = loadChart()
t.setTimeout(300_000)

t.test('extstore: values beyond memoryMB go to the file on the emptyDir and come back from it intact', async (t) => {
  t.ok(hasExtstore(), 'this memcached has extstore (memcached -h lists ext_path)')
  const objects = renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 1, memoryMB: 64, extstore: { enabled: true, sizeMB: 1024 } } }).objects
  const limit = Number(/^(\d+)Mi$/.exec((podOf(objects).containers[0] as unknown as { resources: { limits: { memory: string } } }).resources.limits.memory)![1]) * 1024
  const mc = running(await startPod(objects))
  t.teardown(() => mc.stop())
  const conn = await plain(mc.port)
  t.teardown(() => conn.close())
  const value = (i: number) => `${String(i).padStart(9, '0')}:${'v'.repeat(1990)}`
  const n = 60_000 // 120 MB of values: about twice memoryMB
  for (let i = 0; i < n; i += 500) {
    let batch = ''
    for (let j = i; j < i + 500; j++) batch += `set k${j} 0 0 ${value(j).length} noreply\r\n${value(j)}\r\n`
    await conn.command(batch + 'version\r\n')
  }
  const st = await stats(conn)
  t.ok(Number(st.extstore_objects_written) > 0, `${st.extstore_objects_written} values written to the file`)
  // Read back every value still cached (the oldest may have been evicted before the background
  // thread wrote them out): those on the file come back from it, intact.
  let intact = 0
  let broken = 0
  for (let i = 0; i < n; i += 100) {
    const keys = Array.from({ length: 100 }, (_, k) => `k${i + k}`)
    const out = await conn.command(`get ${keys.join(' ')}\r\n`, 'END\r\n')
    for (const m of out.matchAll(/VALUE k(\d+) 0 (\d+)\r\n([^\r]*)\r\n/g)) (m[3] === value(Number(m[1])) ? intact++ : broken++)
  }
  const after = await stats(conn)
  t.ok(Number(after.get_extstore) > 0, `${after.get_extstore} values read from the file`)
  t.equal(broken, 0, 'none differs from what was set')
  // Every item still cached once the reads are over was read back: items the cache dropped while
  // it was read (under memory pressure, on a busy machine) are in neither count.
  t.ok(intact >= Number(after.curr_items), `${intact} items read back, ${after.curr_items} still cached after the reads (${st.curr_items} before)`)
  const { peak } = rss(mc.pid)
  t.ok(peak <= limit, `peak ${(peak / 1024).toFixed(1)} MiB within the limit ${limit / 1024} MiB`)
})
