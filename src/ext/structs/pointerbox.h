/* PointerBox (pointerbox.c): one pointer slot at a stable address, which the library may fill
 * after a call returns. Communicator and RegisteredWindowHandle keep their handle in one. */
#ifndef NCCL4PY_POINTERBOX_H
#define NCCL4PY_POINTERBOX_H

#include "module/common.h"

typedef struct {
    PyObject_HEAD
    void *slot;
} nx_PointerBox;

/* Adds PointerBox to the module (and the state's types). */
int nx_pointer_box_setup(PyObject *module, nx_state *st);

#endif
