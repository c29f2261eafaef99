"""Accuracy analysis and hybrid quantisation as the toolkit's examples script them.
python analyse.py model.onnx dataset.txt image.jpg"""
import sys

import numpy as np
from rknn.api import RKNN

if __name__ == '__main__':
    model_path, dataset, image = sys.argv[1:4]
    rknn = RKNN()
    rknn.config(mean_values=[[0, 0, 0]], std_values=[[255, 255, 255]], target_platform='rk3566')
    if rknn.load_onnx(model=model_path) != 0 or rknn.build(do_quantization=True, dataset=dataset) != 0:
        exit(-1)
    if rknn.accuracy_analysis(inputs=[image], output_dir='./snapshot') != 0:
        exit(-1)
    golden = np.genfromtxt('./snapshot/golden/y.txt')
    print('golden values', golden.size)
    rknn.release()

    rknn = RKNN()
    rknn.config(mean_values=[[0, 0, 0]], std_values=[[255, 255, 255]], target_platform='rk3566')
    rknn.load_onnx(model=model_path)
    if rknn.hybrid_quantization_step1(dataset=dataset, proposal=False) != 0:
        exit(-1)
    rknn.release()
    rknn = RKNN()
    if rknn.hybrid_quantization_step2(model_input='conv.model', data_input='conv.data',
                                      model_quantization_cfg='conv.quantization.cfg') != 0:
        exit(-1)
    if rknn.export_rknn('./hybrid.rknn') != 0:
        exit(-1)
    rknn.release()
