/* The Python stacks of a process at its SIGUSR1 dump (docs/api/trace.md#python-stacks): where a
 * rank that is not inside a call is, for the verdict.
 *
 * The dump takes no GIL (trace_dump.c), so that a process whose Python is stuck still writes it;
 * reading Python frames needs the GIL. So after each signal dump the writer thread hands the
 * dump's path to a thread of this file's own, which takes the GIL (PyGILState_Ensure) and calls
 * nccl.trace._stacks.write(path): every Python thread's frames, from sys._current_frames(), into
 * rank<R>.stack.json beside the dump. A process whose GIL is never released writes no stack
 * file, and the dump is never held up by it. Once the interpreter has begun to finalize (its
 * atexit callbacks, one of which is ours), no Python is called. */
#include "trace/trace.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t stack_mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t stack_wake;
static int stack_ready;              /* stack_wake is initialised (stack_mu) */
static int stack_running;            /* the thread exists in this process (stack_mu) */
static char stack_dump[PATH_MAX + 32]; /* the dump whose stacks are wanted (stack_mu) */
static int python_gone;              /* the interpreter is finalizing (atomic) */
static int failure_logged;           /* atomic */

static void write_stacks(const char *dump)
{
    PyGILState_STATE g = PyGILState_Ensure();
    if (!__atomic_load_n(&python_gone, __ATOMIC_ACQUIRE)) {
        PyObject *mod = PyImport_ImportModule("nccl.trace._stacks");
        PyObject *r = mod != NULL ? PyObject_CallMethod(mod, "write", "s", dump) : NULL;
        if (r == NULL) {
            if (!__atomic_exchange_n(&failure_logged, 1, __ATOMIC_ACQ_REL)) {
                fprintf(stderr, "nccl4py: could not write the Python stacks beside %s; later failures are not "
                        "reported (docs/api/trace.md#python-stacks):\n", dump);
                PyErr_Print();
            }
            PyErr_Clear();
        }
        Py_XDECREF(r);
        Py_XDECREF(mod);
    }
    PyGILState_Release(g);
}

static void *stack_main(void *arg)
{
    (void)arg;
    char dump[sizeof stack_dump];
    for (;;) {
        while (sem_wait(&stack_wake) != 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&stack_mu);
        memcpy(dump, stack_dump, sizeof dump);
        pthread_mutex_unlock(&stack_mu);
        if (dump[0] != '\0' && !__atomic_load_n(&python_gone, __ATOMIC_ACQUIRE) && Py_IsInitialized())
            write_stacks(dump);
    }
    return NULL;
}

void nx_trace_stack_request(const char *dump)
{
    if (__atomic_load_n(&python_gone, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&stack_mu);
    if (!stack_ready)
        stack_ready = sem_init(&stack_wake, 0, 0) == 0;
    if (stack_ready && !stack_running) {
        pthread_t t;
        pthread_attr_t attr;
        sigset_t all, prev;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* The thread takes no signal: SIGINT and the rest stay with the program's threads. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &prev);
        stack_running = pthread_create(&t, &attr, stack_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &prev, NULL);
        pthread_attr_destroy(&attr);
    }
    snprintf(stack_dump, sizeof stack_dump, "%s", dump);
    int post = stack_running;
    pthread_mutex_unlock(&stack_mu);
    if (post)
        sem_post(&stack_wake);
}

void nx_trace_stack_fork(int phase)
{
    if (phase == NX_FORK_PREPARE) {
        pthread_mutex_lock(&stack_mu);
        return;
    }
    if (phase == NX_FORK_CHILD)
        stack_running = 0; /* the thread stayed in the parent; the next request starts one */
    pthread_mutex_unlock(&stack_mu);
}

/* ---- Python ---- */

PyDoc_STRVAR(python_exiting__doc__, "_trace_python_exiting()\n--\n\n"
"Called by atexit: the flight recorder's stack thread calls no Python from now on.");

static PyObject *python_exiting(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    __atomic_store_n(&python_gone, 1, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyMethodDef stack_methods[] = {
    {"_trace_python_exiting", python_exiting, METH_NOARGS, python_exiting__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_trace_stack_setup(PyObject *module)
{
    int rc = -1;
    PyObject *atexit = NULL, *fn = NULL, *r = NULL;
    if (PyModule_AddFunctions(module, stack_methods) < 0)
        goto done;
    atexit = PyImport_ImportModule("atexit");
    fn = atexit != NULL ? PyObject_GetAttrString(module, "_trace_python_exiting") : NULL;
    r = fn != NULL ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
    rc = r != NULL ? 0 : -1;
done:
    Py_XDECREF(r);
    Py_XDECREF(fn);
    Py_XDECREF(atexit);
    return rc;
}
