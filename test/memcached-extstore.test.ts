/**
 * The chart's extstore against the real memcached (when the binary is built with it, as the
 * official image and Debian's are): for each kind of volume, the rendered args on the rendered
 * volume (an emptyDir; a claim's new filesystem, root's until the kubelet gives it to the pod's
 * fsGroup), values that leave memory written to the file and read back from it, and the process
 * within the rendered memory limit. The start-up rules validate.ejs holds extstore's values to are
 * run against the binary on both sides.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { plain, stats } from './support/memcached-client.ts'
import { hasExtstore, podOf, rss, running, startArgs, startPod } from './support/memcached.ts'

const chart = loadChart()
t.setTimeout(300_000)

const render = (spec: Record<string, unknown>): RenderedObject[] => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 1, memoryMB: 64, ...spec } }).objects
const limitKiB = (objects: RenderedObject[]): number => Number(/^(\d+)Mi$/.exec((podOf(objects).containers[0] as unknown as { resources: { limits: { memory: string } } }).resources.limits.memory)![1]) * 1024

/** Writes about twice memoryMB of values, then reads back every one still cached. */
async function fillAndReadBack(t: Test, objects: RenderedObject[]): Promise<void> {
  t.ok(hasExtstore(), 'this memcached has extstore (memcached -h lists ext_path)')
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
  // What the exporter reads for memcached_extstore_io_queue_depth, which the chart's alert watches.
  t.match(after.extstore_io_queue, /^\d+$/, `stats extstore_io_queue: ${after.extstore_io_queue}`)
  t.ok(Number(after.get_extstore) > 0, `${after.get_extstore} values read from the file`)
  t.equal(broken, 0, 'none differs from what was set')
  // Every item still cached once the reads are over was read back: items the cache dropped while
  // it was read (under memory pressure, on a busy machine) are in neither count.
  t.ok(intact >= Number(after.curr_items), `${intact} items read back, ${after.curr_items} still cached after the reads (${st.curr_items} before)`)
  const { peak } = rss(mc.pid)
  const limit = limitKiB(objects)
  t.ok(peak <= limit, `peak ${(peak / 1024).toFixed(1)} MiB within the limit ${limit / 1024} MiB`)
}

t.test('extstore on an emptyDir: values beyond memoryMB go to the file and come back from it intact', async (t) => {
  await fillAndReadBack(t, render({ extstore: { enabled: true, sizeMB: 1024 } }))
})

t.test('extstore on a generic ephemeral volume: memcached writes its file on the claim the kubelet gave to the fsGroup, and serves from it', async (t) => {
  const objects = render({ extstore: { enabled: true, sizeMB: 512, pageSizeMB: 32, writeBufferMB: 8, volume: { type: 'ephemeral', storageClassName: 'local-nvme' } } })
  t.ok(podOf(objects).volumes?.some((v) => v.name === 'extstore' && v.ephemeral), 'the pod has an ephemeral volume')
  t.match((podOf(objects).containers[0]!.args ?? []).at(-1), /^ext_page_size=32,ext_wbuf_size=8,ext_path=/, 'the page size comes before ext_path, as memcached requires')
  await fillAndReadBack(t, objects)
})

t.test('extstore on a StatefulSet\'s claims: memcached writes its file on the volumeClaimTemplate\'s volume and serves from it', async (t) => {
  const objects = render({ workload: { kind: 'StatefulSet' }, extstore: { enabled: true, sizeMB: 1024, volume: { type: 'persistentVolumeClaim', size: '2Gi' } } })
  t.notOk(podOf(objects).volumes?.some((v) => v.name === 'extstore'), 'the pod template names no extstore volume: the StatefulSet makes the claim')
  await fillAndReadBack(t, objects)
})

t.test('a claim not given to the pods\' group (no fsGroup) is a root-owned filesystem memcached cannot write: it exits', async (t) => {
  const objects = render({ workload: { kind: 'StatefulSet' }, extstore: { enabled: true, volume: { type: 'persistentVolumeClaim' } } })
  delete podOf(objects).securityContext!.fsGroup
  const r = await startPod(objects)
  if (!('code' in r)) {
    await r.stop()
    t.fail('memcached started on a root-owned volume')
    return
  }
  t.match(r.output, /failed to open file/, r.output.trim())
})

// validate.ejs's extstore rules, each against the binary: the values it refuses make memcached exit
// (or, below 2 pages, store nothing), the nearest values it accepts start and serve.
t.test('memcached\'s own extstore rules: what validation refuses, memcached refuses', async (t) => {
  const dir = mkdtempSync('/tmp/mc-ext-')
  chmodSync(dir, 0o777)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const cases: { spec: Record<string, unknown>; args: string[]; refused: RegExp | undefined }[] = [
    { spec: { extstore: { enabled: true, pageSizeMB: 64, writeBufferMB: 6 } }, args: ['-o', `ext_wbuf_size=6,ext_path=${dir}/a:1024M`], refused: /page_size must be divisible by wbuf_size/ },
    { spec: { extstore: { enabled: true, pageSizeMB: 64, writeBufferMB: 8 } }, args: ['-o', `ext_wbuf_size=8,ext_path=${dir}/b:1024M`], refused: undefined },
    { spec: { maxItemSize: '8m', memoryMB: 64, extstore: { enabled: true } }, args: ['-I', '8m', '-o', `ext_path=${dir}/c:1024M`], refused: /cannot be larger than ext_wbuf_size/ },
    { spec: { maxItemSize: '4m', memoryMB: 64, extstore: { enabled: true } }, args: ['-I', '4m', '-o', `ext_path=${dir}/d:1024M`], refused: undefined },
    { spec: { extstore: { enabled: true, pageSizeMB: 64, sizeMB: 4194240 } }, args: ['-o', `ext_path=${dir}/e:4194240M`], refused: /page_count must total to < 65536/ },
    { spec: { extstore: { enabled: true, pageSizeMB: 64, sizeMB: 4194176 } }, args: ['-o', `ext_path=${dir}/f:4194176M`], refused: undefined },
  ]
  for (const c of cases) {
    let problem: string | undefined
    try {
      render(c.spec)
    } catch (err) {
      problem = (err as Error).message
    }
    const r = await startArgs(['-m', '64', ...c.args])
    const exited = 'code' in r
    if (!exited) await r.stop()
    if (c.refused) {
      t.ok(exited && c.refused.test(r.output), `memcached ${c.args.join(' ')}: ${exited ? r.output.trim() : 'started'}`)
      t.ok(problem, `validation refuses ${JSON.stringify(c.spec)}: ${problem}`)
    } else {
      t.notOk(exited, `memcached ${c.args.join(' ')} starts`)
      t.equal(problem, undefined, `validation accepts ${JSON.stringify(c.spec)}`)
    }
  }
})

t.test('below 2 pages memcached writes nothing to the file, which validation refuses; from 2 pages it does', async (t) => {
  const dir = mkdtempSync('/tmp/mc-ext-')
  chmodSync(dir, 0o777)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  t.throws(() => render({ extstore: { enabled: true, sizeMB: 127 } }), /spec\.extstore\.sizeMB: must hold at least 2 pages/)
  t.doesNotThrow(() => render({ extstore: { enabled: true, sizeMB: 128 } }))
  for (const [size, writes] of [[127, false], [128, true]] as const) {
    const mc = running(await startArgs(['-m', '64', '-o', `ext_path=${dir}/f${size}:${size}M`]))
    t.teardown(() => mc.stop())
    const conn = await plain(mc.port)
    t.teardown(() => conn.close())
    const value = 'v'.repeat(2000)
    for (let i = 0; i < 60_000; i += 500) {
      let batch = ''
      for (let j = i; j < i + 500; j++) batch += `set k${j} 0 0 ${value.length} noreply\r\n${value}\r\n`
      await conn.command(batch + 'version\r\n')
    }
    const written = Number((await stats(conn)).extstore_objects_written)
    t.equal(written > 0, writes, `ext_path of ${size}M: ${written} values written to the file`)
  }
})

t.test('a claim of the rendered size, formatted ext4 as mke2fs does by default, leaves the file\'s size to memcached (not root)', async (t) => {
  if (spawnSync('mke2fs', ['-V']).error) throw new Error('mke2fs is needed by this test and is missing: install it with `apt-get install -y e2fsprogs`')
  for (const sizeMB of [128, 1024, 16384]) {
    const objects = render({ extstore: { enabled: true, sizeMB, volume: { type: 'ephemeral' } } })
    const storage = (podOf(objects).volumes!.find((v) => v.name === 'extstore')!.ephemeral!.volumeClaimTemplate as { spec: { resources: { requests: { storage: string } } } }).spec.resources.requests.storage
    const mi = Number(/^(\d+)Mi$/.exec(storage)![1])
    const image = `${mkdtempSync('/tmp/mc-fs-')}/volume.img`
    t.teardown(() => rmSync(image.replace(/\/volume\.img$/, ''), { recursive: true, force: true }))
    writeFileSync(image, '')
    truncateSync(image, mi * 1024 * 1024)
    const mk = spawnSync('mke2fs', ['-q', '-F', '-t', 'ext4', image], { encoding: 'utf8' })
    t.equal(mk.status, 0, mk.stderr)
    const header = spawnSync('dumpe2fs', ['-h', image], { encoding: 'utf8' }).stdout
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(header)![1])
    const usable = (field('Free blocks') - field('Reserved block count')) * field('Block size')
    t.ok(usable >= sizeMB * 1024 * 1024, `a ${sizeMB} MB file: claim ${storage}, ${(usable / 2 ** 20).toFixed(0)} MiB usable by a non-root user`)
  }
})
