/** images/image-records.ts: image metadata files — written whole, listed in order, bad names and files refused. */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { silentLogger } from '../../src/domain/logger.ts';
import type { ImageRecord } from '../../src/domain/types.ts';
import { createImageRecords, validateImageName } from '../../src/images/image-records.ts';

const record = (name: string, layers: string[]): ImageRecord => ({
  name,
  id: `id-${name}`,
  layers,
  createdAt: 1,
  sizeBytes: 2,
  source: 'test',
  env: {},
  python: null,
});

test('records are written whole, listed by name, and their layers counted as in use', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fb-records-'));
  try {
    const logged: string[] = [];
    const r = createImageRecords(dir, {
      warn: (obj: object | string) => void logged.push(JSON.stringify(obj)),
    });
    r.write(record('b', ['/l/2', '/l/3']));
    r.write(record('a', ['/l/1']));
    writeFileSync(join(dir, 'broken.json'), '{');
    writeFileSync(join(dir, '.c.tmp'), 'half');
    assert.deepEqual(
      r.list().map((x) => x.name),
      ['a', 'b'],
    );
    assert.equal(logged.length, 1);
    assert.match(logged[0] ?? '', /broken\.json/);
    assert.deepEqual([...r.layersInUse()].sort(), ['/l/1', '/l/2', '/l/3']);
    assert.equal(r.get('a')?.id, 'id-a');
    // No temp files left behind by the writes.
    assert.deepEqual(readdirSync(dir).sort(), ['.c.tmp', 'a.json', 'b.json', 'broken.json']);
    r.unlink('b');
    assert.equal(r.get('b'), undefined);
    assert.throws(
      () => r.require('b'),
      (e: unknown) => isForkboxError(e) && e.code === 'not_found',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a name that could leave the images directory is never looked up, and is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fb-records-'));
  try {
    writeFileSync(join(dir, '..', 'fb-outside.json'), JSON.stringify(record('x', [])));
    const r = createImageRecords(dir, silentLogger);
    assert.equal(r.get('../fb-outside'), undefined);
    assert.throws(
      () => validateImageName('../fb-outside'),
      (e: unknown) => isForkboxError(e) && e.code === 'invalid_argument',
    );
    validateImageName('debian-1.2_x');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(tmpdir(), 'fb-outside.json'), { force: true });
  }
});
