/** Routes `require('vscode')` and `require('vscode-languageclient/node')` to the test doubles. */
import { Module } from 'node:module';
import * as fakeClient from './languageclient';
import * as fakeVscode from './vscode';

const loader = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
const originalLoad = loader._load;
loader._load = (request: string, parent: unknown, isMain: boolean): unknown => {
    if (request === 'vscode') {
        return fakeVscode;
    }
    if (request === 'vscode-languageclient/node') {
        return fakeClient;
    }
    return originalLoad(request, parent, isMain);
};
