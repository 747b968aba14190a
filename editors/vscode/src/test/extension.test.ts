// A smoke test of the extension's glue under plain Node: a stand-in `vscode` module records what the
// extension registers, and a server that cannot start must end in a clear message, not a crash.

import * as assert from 'node:assert/strict';
import Module = require('node:module');
import { describe, it } from 'node:test';

interface Recorded {
  commands: string[];
  errors: string[];
}

const recorded: Recorded = { commands: [], errors: [] };

function disposable(): { dispose: () => void } {
  return { dispose: () => undefined };
}

const event = (): { dispose: () => void } => disposable();

class EventEmitter<T> {
  private listeners: ((value: T) => void)[] = [];
  readonly event = (listener: (value: T) => void): { dispose: () => void } => {
    this.listeners.push(listener);
    return disposable();
  };
  fire(value: T): void {
    for (const listener of this.listeners) {
      listener(value);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

class Disposable {
  constructor(private readonly fn: () => void) {}
  static from(...items: { dispose: () => void }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

const known: Record<string, unknown> = {
  EventEmitter,
  Disposable,
  commands: {
    registerCommand: (name: string) => {
      recorded.commands.push(name);
      return disposable();
    },
    executeCommand: async () => undefined,
  },
  workspace: {
    workspaceFolders: undefined,
    textDocuments: [],
    getConfiguration: () => ({ get: <T>(_key: string, fallback: T): T => (_key === 'serverPath' ? ('/nonexistent/trainmedic' as T) : fallback) }),
    onDidChangeConfiguration: event,
    onDidOpenTextDocument: event,
    onDidCloseTextDocument: event,
    onDidChangeTextDocument: event,
    onDidSaveTextDocument: event,
    onWillSaveTextDocument: event,
    onDidChangeWorkspaceFolders: event,
    createFileSystemWatcher: () => ({ ...disposable(), onDidCreate: event, onDidChange: event, onDidDelete: event }),
  },
  window: {
    createOutputChannel: () => ({ ...disposable(), append: () => undefined, appendLine: () => undefined, show: () => undefined, replace: () => undefined, clear: () => undefined, hide: () => undefined, name: 'trainmedic' }),
    showErrorMessage: async (message: string) => {
      recorded.errors.push(message);
      return undefined;
    },
    showInformationMessage: async () => undefined,
    showWarningMessage: async () => undefined,
    onDidChangeActiveTextEditor: event,
    onDidChangeVisibleTextEditors: event,
    visibleTextEditors: [],
    activeTextEditor: undefined,
  },
  env: { clipboard: { readText: async () => '', writeText: async () => undefined }, openExternal: async () => true },
  languages: { match: () => 0, createDiagnosticCollection: () => ({ ...disposable(), set: () => undefined, delete: () => undefined, clear: () => undefined }) },
  extensions: { getExtension: () => undefined },
  version: '1.82.0',
};

// Everything else the language client touches at load time is a class it extends or an enum it reads.
const vscodeStub = new Proxy(known, {
  get(target, key: string) {
    if (key in target) {
      return target[key];
    }
    return class {
      static [Symbol.hasInstance](): boolean {
        return false;
      }
    };
  },
});

const loader = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
const originalLoad = loader._load;
loader._load = function load(request: string, parent: unknown, isMain: boolean): unknown {
  return request === 'vscode' ? vscodeStub : originalLoad.call(this, request, parent, isMain);
};

describe('extension', () => {
  it('registers its commands and reports a server that cannot start', async () => {
    const extension = require('../extension') as { activate: (ctx: unknown) => Promise<void>; deactivate: () => Promise<void> };
    const context = { subscriptions: [] as unknown[] };
    await extension.activate(context);
    assert.deepEqual(recorded.commands.sort(), [
      'trainmedic.diagnoseLog',
      'trainmedic.diagnoseSelection',
      'trainmedic.diagnoseTerminal',
      'trainmedic.restartServer',
    ]);
    // The language client reports the failed launch too; ours says what to do about it.
    const ours = recorded.errors.filter((e) => e.startsWith('trainmedic: could not start'));
    assert.equal(ours.length, 1, recorded.errors.join('\n'));
    assert.match(ours[0] ?? '', /could not start `\/nonexistent\/trainmedic lsp`/);
    assert.match(ours[0] ?? '', /pip install 'trainmedic\[lsp\]'/);
    await extension.deactivate();
  });
});
