"""The model zoo's Python demo flow on an exported model: load_rknn, init_runtime(target=...), inference on an RGB
uint8 HWC image as decoded (no batch axis, no data_format), then the board-side evaluations.
python run_rknn.py model.rknn image.npy out.npy"""
import sys

import numpy as np
from rknn.api import RKNN

if __name__ == '__main__':
    model_path, image_path, out_path = sys.argv[1:4]
    rknn = RKNN()
    if rknn.load_rknn(model_path) != 0:
        exit(-1)
    ret = rknn.init_runtime(target='rk3588', perf_debug=True, eval_mem=True)
    if ret != 0:
        print('Init runtime environment failed!')
        exit(ret)
    img = np.load(image_path)
    outputs = rknn.inference(inputs=[img])
    np.save(out_path, outputs[0])
    rknn.eval_perf()
    memory = rknn.eval_memory()
    print('total_memory', memory['total_memory'])
    rknn.release()
