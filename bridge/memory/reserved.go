package memory

import (
	"slices"
	"strings"
)

// builtinNames is dir(builtins) of Python 3.11, the sandbox image's, with
// laterBuiltins: a saved helper of such a name would replace print, open,
// len, ... in every later session. TestReservedBuiltins checks it against
// the python3 at hand.
var builtinNames = append([]string{
	"ArithmeticError", "AssertionError", "AttributeError", "BaseException", "BaseExceptionGroup", "BlockingIOError",
	"BrokenPipeError", "BufferError", "BytesWarning", "ChildProcessError", "ConnectionAbortedError", "ConnectionError",
	"ConnectionRefusedError", "ConnectionResetError", "DeprecationWarning", "EOFError", "Ellipsis", "EncodingWarning",
	"EnvironmentError", "Exception", "ExceptionGroup", "False", "FileExistsError", "FileNotFoundError",
	"FloatingPointError", "FutureWarning", "GeneratorExit", "IOError", "ImportError", "ImportWarning",
	"IndentationError", "IndexError", "InterruptedError", "IsADirectoryError", "KeyError", "KeyboardInterrupt",
	"LookupError", "MemoryError", "ModuleNotFoundError", "NameError", "None", "NotADirectoryError", "NotImplemented",
	"NotImplementedError", "OSError", "OverflowError", "PendingDeprecationWarning", "PermissionError",
	"ProcessLookupError", "RecursionError", "ReferenceError", "ResourceWarning", "RuntimeError", "RuntimeWarning",
	"StopAsyncIteration", "StopIteration", "SyntaxError", "SyntaxWarning", "SystemError", "SystemExit", "TabError",
	"TimeoutError", "True", "TypeError", "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError",
	"UnicodeError", "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError", "Warning",
	"ZeroDivisionError", "__build_class__", "__debug__", "__doc__", "__import__", "__loader__", "__name__",
	"__package__", "__spec__", "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray",
	"bytes", "callable", "chr", "classmethod", "compile", "complex", "copyright", "credits", "delattr", "dict", "dir",
	"divmod", "enumerate", "eval", "exec", "exit", "filter", "float", "format", "frozenset", "getattr", "globals",
	"hasattr", "hash", "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len", "license",
	"list", "locals", "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord", "pow", "print",
	"property", "quit", "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted", "staticmethod",
	"str", "sum", "super", "tuple", "type", "vars", "zip",
}, laterBuiltins...)

// laterBuiltins are builtins that Pythons after 3.11 added (3.13), reserved
// too since images may carry a newer Python.
var laterBuiltins = []string{"PythonFinalizationError", "_IncompleteInputError"}

// sandboxGlobals are the names codebridge's runner and its mcp package put
// in every session's namespace (codebridge_runner._namespace, mcp._globals,
// mcp.__all__), and the package's own name; every mcp_<alias> is reserved
// too. TestReservedSandboxGlobals checks the list against the Python files.
var sandboxGlobals = []string{
	"MCPError", "call_tool", "call_tool_sync", "capability_summary", "check_tools", "check_tools_sync", "delete_memory", "delete_saved_tool",
	"describe_server", "discovered_servers", "get_memory_info", "get_prompt", "get_prompt_sync",
	"list_loaded_server_metadata", "list_memories", "list_prompts", "list_prompts_sync", "list_resource_templates",
	"list_resource_templates_sync", "list_resources", "list_resources_sync", "list_saved_tools", "list_servers",
	"list_servers_sync", "list_tools", "list_tools_sync", "load_memory", "mcp", "mcp_servers", "memory_exists",
	"query_tool_docs", "query_tool_docs_sync", "read_resource", "read_resource_sync", "return_file", "runtime",
	"save_memory", "save_tool", "search_tool_docs", "search_tool_docs_sync", "show_image", "update_memory",
}

// reserved says why name cannot be a saved helper's, or "" when it can.
func reserved(name string) string {
	switch {
	case slices.Contains(keywords, name):
		return "it is a Python keyword"
	case slices.Contains(builtinNames, name):
		return "it is a Python builtin, which every session uses"
	case slices.Contains(sandboxGlobals, name) || strings.HasPrefix(name, "mcp_"):
		return "it is one of codebridge's own globals (call_tool, runtime, mcp_servers, mcp_<server>, ...), which every session uses"
	case strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__"):
		return "names like __x__ belong to Python and the session's module"
	}
	return ""
}
